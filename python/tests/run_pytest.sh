#!/usr/bin/env bash
# run_pytest.sh MODELS_DIR EVAL_DIR [PARLEY_CLI [TEST_DIR]]: the Python suite (TEST_DIR, default
# this folder); a run that collects no test
# (pytest's exit status 5) fails, so a renamed file cannot pass silently.
set -uo pipefail
export PARLEY_TEST_MODELS=$1 PARLEY_TEST_EVAL=$2 PARLEY_TEST_CLI=${3:-}
/usr/bin/python3 -m pytest -q -p no:cacheprovider "${4:-$(dirname "$0")}"
status=$?
if [ "$status" -eq 5 ]; then
  echo "FAILED: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
