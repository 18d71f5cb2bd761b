# Shared by the command-line test scripts (source it): `check NAME EXPECTED_RC REGEX -- cmd...`
# runs a command, and records a failure in $fail unless it exits with EXPECTED_RC and its output
# (stdout and stderr) matches the extended regex REGEX.
fail=0
check() {
  local name="$1" want_rc="$2" regex="$3"; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want_rc" ]; then
    echo "FAIL $name: exit $rc, wanted $want_rc"; echo "$out" | head -20; fail=1; return
  fi
  if ! grep -Eq -- "$regex" <<<"$out"; then
    echo "FAIL $name: output does not match /$regex/"; echo "$out" | head -20; fail=1; return
  fi
  echo "ok   $name"
}
