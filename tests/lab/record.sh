#!/bin/bash
# record.sh SCENARIO [TIMEOUT_S]: boots the ZFS lab VM (../shared/lab), runs
# scenarios/SCENARIO.sh in it with a freshly built release `zpulse` beside it, and copies the
# captures it wrote into tests/fixtures/lab/SCENARIO/.
#
# Needs the lab image (../shared/lab/build-image.sh, once per machine, ~8 min) and
# qemu-system-x86 + debootstrap. Runs under software emulation: expect 5-20 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
lab=${LAB_SHARED:-$repo/../shared/lab}
scenario=$1; limit=${2:-1800}
[[ -f $here/scenarios/$scenario.sh ]] || { echo "no scenario $scenario" >&2; exit 2; }
share=$(mktemp -d /tmp/zpulse-lab.XXXX)
cp -r "$lab/guest" "$share/guest"
# Only scenarios that run zpulse in the guest (themselves, through lib/events.sh's `cap` or
# lib/series.sh's `series`) need a fresh release build.
if grep -qE '\$Z\b|lib/(events|series).sh' "$here/scenarios/$scenario.sh"; then
  (cd "$repo" && cargo build --release -q -p zpulse-agent)
  cp "$repo/target/release/zpulse" "$share/zpulse"
fi
# And the shipped checks, for a scenario that runs them.
if grep -q 'libzpulse_checks.so' "$here/scenarios/$scenario.sh"; then
  (cd "$repo" && cargo build --release -q -p zpulse-checks)
  cp "$repo/target/release/libzpulse_checks.so" "$share/libzpulse_checks.so"
fi
# And the sample bench's binary, for a scenario that runs it (`$H/sample-bench`).
if grep -q 'sample-bench' "$here/scenarios/$scenario.sh"; then
  exe=$(cd "$repo" && cargo bench -q -p zpulse-tests --bench sample --no-run \
          --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "sample":
        print(m["executable"])')
  cp "$exe" "$share/sample-bench"
fi
# And nvcal (tests/lab/tools/nvcal.c) with the synthetic captures' POOL_STATS replies of 200
# and 2,000 leaf vdevs in replies/, for a scenario that runs it.
if grep -q 'nvcal' "$here/scenarios/$scenario.sh"; then
  gcc -O2 -Wall -o "$share/nvcal" "$here/tools/nvcal.c" -ldl
  mkdir -p "$share/replies"
  for n in 200 2000; do
    series=$("$share/sample-bench" --synthetic vdevs $n "$share/synthetic")
    cp "$series/001/zfs-ioctl/pool_stats/tank.nvlist" "$share/replies/$n.nvlist"
  done
  rm -rf "$share/synthetic"
fi
# A scenario may ask for VM settings in one line: `# LAB_ENV: HDD_PBS=4096 MEM=2048`.
env_line=$(sed -n 's/^# LAB_ENV: *//p' "$here/scenarios/$scenario.sh" | head -1)
for kv in $env_line; do export "${kv?}"; done
cp "$here/scenarios/$scenario.sh" "$share/run.sh"; chmod +x "$share/run.sh"
cp -r "$here/scenarios/lib" "$share/lib"
"$lab/run-vm.sh" "$share" "$limit"
rc=$(cat "$share/run.rc" 2>/dev/null || echo none)
dest=$repo/tests/fixtures/lab/$scenario
rm -rf "$dest"; mkdir -p "$dest"
cp -r "$share/out/." "$dest/" 2>/dev/null || true
cp "$share/run.log" "$dest/run.log" 2>/dev/null || true
echo "scenario $scenario: run.rc=$rc, captures in $dest (share kept in $share)"
[[ $rc == 0 ]]
