#!/bin/bash
# The diarize demo model's GPU run (issue #63), on a machine without
# espeak-ng/sox: build-demo/gpu-bundle (make_bundle.sh) carried along, as
# device_train.sh.  Makes DIALOGUES training dialogues (30-90 s, cut TILINGS
# times into windows) with 16 processes, then fine-tunes models/demo with
# the extended vocabulary for the time left of TOTAL_SECONDS, exporting the
# best dev model (speaker-attributed WER of the dev windows) into
# $OUT/export-diarize, and evaluates it on NEVAL (8) held-out dialogues of 1-5
# minutes within EVAL_S (75) seconds (per-dialogue rows in eval.log as they come).
#   device_train_diarize.sh DIALOGUES TOTAL_SECONDS [extra train.py args]
set -u
PY=${PY:-python3}
START=$(date +%s)
N=${1:-600}; BUDGET=${2:-540}; shift 2
OUT=${OUT:-build-demo/device-out}; mkdir -p "$OUT"
TILINGS=${TILINGS:-3}; NDEV=${NDEV:-24}; NEVAL=${NEVAL:-8}; EVAL_S=${EVAL_S:-75}
. "$(dirname "$0")/bundle_path.sh"
rm -rf /tmp/dzdata /tmp/tiny /tmp/run-dz
espeak-ng -v da --stdout "Hej med dig." | sox -t wav - -t raw -r 16000 -e float -b 32 -c 1 - | wc -c
nvidia-smi --query-gpu=name,memory.used --format=csv
OMP_NUM_THREADS=1 $PY research/train-demo/make_diarize_data.py --out /tmp/dzdata --tokenizer models/demo/tokenizer.model \
    --train "$N" --dev "$NDEV" --tilings "$TILINGS" --seed 2 --jobs 16 > "$OUT/data.log" 2>&1 &
DPID=$!
# smoke test of the CUDA training path on the dev split while the training data is made
while [ ! -f /tmp/dzdata/dev.jsonl ]; do sleep 2; kill -0 $DPID 2>/dev/null || { cat "$OUT/data.log"; exit 4; }; done
mkdir -p /tmp/tiny && cp /tmp/dzdata/tokenizer.model /tmp/tiny/ && cp /tmp/dzdata/dev.jsonl /tmp/tiny/train.jsonl \
  && head -4 /tmp/dzdata/dev.jsonl > /tmp/tiny/dev.jsonl && for f in /tmp/dzdata/dev.*.f16; do cp $f /tmp/tiny/; cp $f /tmp/tiny/train.${f#/tmp/dzdata/dev.}; done
$PY research/train-demo/train.py --diarize --data /tmp/tiny --run /tmp/tiny/run --export "" --init models/demo \
    --device ${DEVICE:-cuda} --max-steps 3 --ctc-only-steps 0 --ctc-weight 0 --threads 2 2>&1 | tail -4
[ ${PIPESTATUS[0]} -eq 0 ] || { echo "smoke test failed"; kill $DPID; exit 5; }
wait $DPID; cat "$OUT/data.log"
EL=$(( $(date +%s) - START ))
MIN=$($PY -c "print(round(max(1.0, ($BUDGET - $EL - $EVAL_S) / 60 - 0.8), 2))")
echo "data ready after $EL s; training for $MIN min"
$PY research/train-demo/train.py --diarize --data /tmp/dzdata --run /tmp/run-dz --export "$OUT/export-diarize" \
    --init models/demo --device ${DEVICE:-cuda} --threads 4 --ctc-only-steps 0 --ctc-weight 0 --specaug-from 0 \
    --lr 1e-3 --warmup 150 --batch-frames 32000 --max-bs 96 --eval-min 1.5 \
    --max-minutes "$MIN" --time-schedule "$@" 2>&1 | tee "$OUT/train.log"
cp /tmp/run-dz/best.pt "$OUT/best-diarize.pt" 2>/dev/null
ls -la "$OUT" "$OUT/export-diarize"
timeout "${EVAL_S}" $PY research/train-demo/evaluate-diarize --model "$OUT/export-diarize" --count "$NEVAL" \
    --device ${DEVICE:-cuda} --threads 8 --json "$OUT/eval-diarize.json" 2>&1 | tee "$OUT/eval.log"
echo "total $(( $(date +%s) - START )) s"
