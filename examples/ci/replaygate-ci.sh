#!/usr/bin/env bash
# replaygate in CI as a plain shell script; github-actions.yml beside it runs the same two modes.
#
#   examples/ci/replaygate-ci.sh smoke     # every pull request: lint, the smoke tier (baseline, candidate), gate
#   examples/ci/replaygate-ci.sh release   # the release branch: lint, the release tier (baseline twice for the
#                                          # noise floor, candidate), gate
#
# Run it from the repository root (the target module is imported from there). Settings, from the
# environment (defaults: the example support agent):
#   RG_TARGET             module:function or http(s):// URL      [examples.support_agent.target:run_session]
#   RG_GOLDEN             golden-set folder                       [examples/support_agent/golden]
#   RG_POLICY             gate policy                             [examples/gate-policy.yaml]
#   RG_BASELINE_CONFIG    the configuration in production        [examples/support_agent/configs/production.yaml]
#   RG_BASELINE_CONFIG_2  the second baseline run's configuration [RG_BASELINE_CONFIG]
#   RG_CANDIDATE_CONFIG   the configuration under review          [examples/support_agent/configs/candidate.yaml]
#   RG_OUT                a new folder for run files and reports  [replaygate-ci]
#   RG_REPEATS (5)  RG_SMOKE_REPEATS (2)  RG_CONCURRENCY (8)  RG_TIMEOUT (60)  RG_PROGRESS_EVERY (30)
#
# Writes RG_OUT/{baseline,baseline-2,candidate}.json and RG_OUT/report/ (report.md for the pull-request
# comment, junit.xml for the test report, report.html, report.json). Every command is printed before it
# runs. Exit code, the check's status:
#   0  pass                       the gate passed
#   1  blocked                    the gate blocked the candidate (the report says what to fix)
#   2  needs a person             the gate passed only with a named person's sign-off or review
#   3  broken pipeline            lint errors, an attempt that errored, a usage or data error: never a pass
set -uo pipefail

mode="${1:-}"
case "$mode" in
  smoke) tier=smoke; repeats="${RG_SMOKE_REPEATS:-2}" ;;
  release) tier=release; repeats="${RG_REPEATS:-5}" ;;
  *) echo "usage: $0 smoke|release" >&2; exit 3 ;;
esac

target="${RG_TARGET:-examples.support_agent.target:run_session}"
golden="${RG_GOLDEN:-examples/support_agent/golden}"
policy="${RG_POLICY:-examples/gate-policy.yaml}"
baseline="${RG_BASELINE_CONFIG:-examples/support_agent/configs/production.yaml}"
baseline2="${RG_BASELINE_CONFIG_2:-$baseline}"
candidate="${RG_CANDIDATE_CONFIG:-examples/support_agent/configs/candidate.yaml}"
out="${RG_OUT:-replaygate-ci}"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"

if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "error: $out exists and is not empty; remove it or set RG_OUT to a new folder" >&2
  exit 3
fi
mkdir -p "$out" || exit 3

step() {  # print a command, run it, return its exit code
  printf '$ %s\n' "$*"
  "$@"
}

broken() {
  echo "replaygate-ci: BROKEN PIPELINE: $1 (exit $2); an error is never a pass" >&2
  exit 3
}

step replaygate scenarios lint --golden "$golden"
code=$?
[ "$code" -eq 0 ] || broken "the golden set does not lint" "$code"

run() {  # run NAME CONFIG: one replay of the tier into RG_OUT/NAME.json
  step replaygate run --target "$target" --config "$2" --golden "$golden" --tier "$tier" \
    --repeats "$repeats" --concurrency "${RG_CONCURRENCY:-8}" --timeout "${RG_TIMEOUT:-60}" \
    --policy "$policy" --progress lines --progress-every "${RG_PROGRESS_EVERY:-30}" --out "$out/$1.json"
  local rc=$?
  [ "$rc" -eq 0 ] || broken "replaygate run of $1 failed (1: an attempt errored, 3: usage or data)" "$rc"
}

run baseline "$baseline"
gate_args=(--policy "$policy" --baseline "$out/baseline.json" --candidate "$out/candidate.json")
if [ "$mode" = release ]; then
  run baseline-2 "$baseline2"
  gate_args+=(--baseline-2 "$out/baseline-2.json")
fi
run candidate "$candidate"

step replaygate gate "${gate_args[@]}" --out "$out/report"
code=$?
case "$code" in
  0) echo "replaygate-ci: PASS ($mode): report in $out/report/report.md" ;;
  1) echo "replaygate-ci: BLOCKED ($mode): the candidate may not be released; see $out/report/report.md" ;;
  2) echo "replaygate-ci: NEEDS SIGN-OFF ($mode): a named person must review and sign; see $out/report/report.md" ;;
  *) broken "replaygate gate could not decide" "$code" ;;
esac
exit "$code"
