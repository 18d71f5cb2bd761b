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
# `same_checkpoint WHAT DIR_A DIR_B`: two checkpoint folders hold the same safetensors files (the
# bf16 export and every rank's exact state), byte for byte; records a failure in $fail otherwise.
same_checkpoint() {
  local what="$1" a="$2" b="$3" names f
  names=$(cd "$a" && ls ./*.safetensors 2>/dev/null | sort)
  if [ -z "$names" ] || [ "$names" != "$(cd "$b" && ls ./*.safetensors 2>/dev/null | sort)" ]; then
    echo "FAIL $what: other safetensors files: $(ls "$a" | tr '\n' ' ') vs $(ls "$b" | tr '\n' ' ')"; fail=1; return
  fi
  for f in $names; do
    if ! cmp -s "$a/$f" "$b/$f"; then echo "FAIL $what: ${f#./} differs"; fail=1; return; fi
  done
  echo "ok   $what: $(echo $names | wc -w) safetensors files identical"
}
