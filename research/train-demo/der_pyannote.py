"""DER by pyannote.metrics (der-requirements.lock), for evaluate-diarize
--pyannote: reads [[reference, hypothesis], ...] (each [[label, start s,
end s], ...]) as JSON from stdin, writes {"each": [DER per pair], "total":
DER over all pairs} as JSON.  pyannote's collar is the collar's whole
width, so a collar of +-C seconds is DiarizationErrorRate(collar=2C).

  der_pyannote.py COLLAR < pairs.json
"""

import json
import sys

from pyannote.core import Annotation, Segment
from pyannote.metrics.diarization import DiarizationErrorRate


def annotation(segs):
    a = Annotation()
    for k, (label, s, e) in enumerate(segs):
        a[Segment(float(s), float(e)), k] = str(label)
    return a


def main():
    collar = float(sys.argv[1])
    total = DiarizationErrorRate(collar=2 * collar, skip_overlap=False)
    each = []
    for ref, hyp in json.load(sys.stdin):
        R, H = annotation(ref), annotation(hyp)
        each.append(DiarizationErrorRate(collar=2 * collar, skip_overlap=False)(R, H))
        total(R, H)
    json.dump({"each": each, "total": abs(total)}, sys.stdout)


if __name__ == "__main__":
    main()
