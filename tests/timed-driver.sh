#!/bin/sh
# timed-driver.sh DRIVER ARGS...: automake's test driver (LOG_DRIVER), and
# the test's wall time appended to its .log as "nnk-test-seconds: S", from
# which tests/run-all.sh prints the slowest tests of each stage.
log=
prev=
for a in "$@"; do
    [ "$prev" = --log-file ] && log=$a
    prev=$a
done
t0=$(date +%s.%N 2>/dev/null)
"$@"
rc=$?
t1=$(date +%s.%N 2>/dev/null)
if [ -n "$log" ] && [ -f "$log" ]; then
    # %N is GNU date's; elsewhere whole seconds
    echo "$t0 $t1" | awk '{ t0 = $1; t1 = $2; sub(/\.N$/, "", t0); sub(/\.N$/, "", t1);
                             printf "nnk-test-seconds: %.1f\n", t1 - t0 }' >> "$log"
fi
exit $rc
