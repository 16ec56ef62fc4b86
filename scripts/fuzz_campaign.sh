#!/usr/bin/env bash
# A fuzz campaign on one target (docs/fuzzing.md): scripts/fuzz_campaign.sh TARGET MINUTES
#   TARGET: load_model, tensor_file, text_form, rule_file or convert
# Runs build-fuzz/fuzz/ovfix_fuzz_TARGET (scripts/fuzz_smoke.sh builds it; FUZZ_BUILD=DIR for
# another build) for MINUTES at low priority on the kept corpus fuzz/corpus/TARGET, the seeds
# and fuzz/regressions/TARGET, with the target's dictionary; new inputs go to
# fuzz-work/TARGET/new. Then it merges them into the kept corpus (libFuzzer's -merge=1 keeps
# only inputs that add coverage; inputs over 4 KB are left out, so the corpus stays small),
# minimizes each finding into fuzz-work/TARGET/, and prints executions, exec/s, coverage
# before -> after, the inputs the corpus gained and the findings. Exit 1 when it found any.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz_campaign.sh TARGET MINUTES}
minutes=${2:?usage: scripts/fuzz_campaign.sh TARGET MINUTES}
build=${FUZZ_BUILD:-build-fuzz}
fuzzer="$build/fuzz/ovfix_fuzz_$target"
[[ -x $fuzzer ]] || { echo "fuzz_campaign: no $fuzzer (scripts/fuzz_smoke.sh builds it)" >&2; exit 2; }
case $target in
  rule_file) dict=(-dict=fuzz/rule_file.dict) ;;
  text_form | convert) dict=(-dict=fuzz/onnx_text.dict) ;;
  *) dict=() ;;
esac
work="fuzz-work/$target"
corpus="fuzz/corpus/$target"
mkdir -p "$work/new" "$corpus"
corpora=("$work/new" "$corpus")
for extra in "$build/fuzz/seeds/$target" "fuzz/regressions/$target"; do
  [[ -d $extra ]] && corpora+=("$extra")
done
log="$work/campaign.log"
set +e
nice -n 19 "$fuzzer" "${dict[@]}" -max_total_time=$((minutes * 60)) -timeout=30 \
  -rss_limit_mb=3072 -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/" \
  "${corpora[@]}" > "$log" 2>&1
set -e
before=$(grep -m1 -o 'INITED cov: [0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
after=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
count_before=$(find "$corpus" -type f | wc -l)
nice -n 19 "$fuzzer" -merge=1 -max_len=4096 "$corpus" "$work/new" > "$work/merge.log" 2>&1 || true
gained=$(( $(find "$corpus" -type f | wc -l) - count_before ))
findings=()
for f in "$work"/crash-* "$work"/oom-* "$work"/timeout-* "$work"/leak-*; do
  [[ -e $f ]] || continue
  findings+=("$f")
  nice -n 19 "$fuzzer" -minimize_crash=1 -runs=10000 -exact_artifact_path="$f.min" "$f" \
    > "$f.minimize.log" 2>&1 || true
done
echo "$target: $minutes min, $runs executions, $rate exec/s, coverage $before -> $after," \
  "corpus +$gained inputs, ${#findings[@]} finding(s)"
for f in "${findings[@]}"; do echo "  finding: $f (minimized: $f.min)"; done
[[ ${#findings[@]} -eq 0 ]]
