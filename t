/work/wt-i52/examples/da-example.wav: I morgen bliver det gråt med minus tyve grader.
