# Sourced by the shell tests: require_shared FILE... checks that each FILE exists below
# $PARLEY_SHARED_DIR. Without the shared folder the test is skipped (exit 77, CTest's
# SKIP_RETURN_CODE); with the folder present a missing file fails it, so a renamed file cannot
# turn the test into a silent no-op.
require_shared() {
  local shared=${PARLEY_SHARED_DIR:?set PARLEY_SHARED_DIR to the shared folder}
  if [ ! -d "$shared" ]; then
    echo "skipping: shared folder $shared not found (set PARLEY_SHARED_DIR)"
    exit 77
  fi
  local needed
  for needed in "$@"; do
    if [ ! -e "$shared/$needed" ]; then
      echo "FAILED: '$needed' not found under the shared folder $shared: restore it, or update the test if it was renamed" >&2
      exit 1
    fi
  done
}
