#!/bin/bash
# A reboot read back through the history and the captures (docs/report.md, "Intervals left
# out"): the guest reboots once, by kexec into its own kernel (kexec.target: systemd stops
# every service, zpulse with it, and starts the kernel again without leaving qemu, so the disks
# and the root file system stay), and this script runs at each boot.
#   boot 1: pool `rb` (SSD mirror sdc, sdd) under 1 MB/s of writes; `zpulse run` at a 10 s
#           interval with its history in /var/lib/zpulse-history on the root disk; captures
#           series/000, 001 10 s apart; then the reboot.
#   boot 2: the pool imported by zfs-import-cache at boot, the same writes, `zpulse run` on the
#           same history for 65 s; captures series/002, 003; the history kept as history/.
# Ground truth in boots.txt, one line a boot: the kernel's boot_id, `btime` of /proc/stat and
# the guest's clock when this script started; times.txt: the zpulse runs' starts and the
# reboot's request, Unix seconds. Each boot's trace goes to boot-N.log (run.log holds only
# the last boot's).
set -x
H=/mnt/host; O=$H/out; Z=$H/zpulse
mkdir -p $O/series
n=$(($(cat $O/boots.txt 2>/dev/null | wc -l) + 1))
exec > >(tee -a "$O/boot-$n.log") 2>&1
echo "boot_id $(cat /proc/sys/kernel/random/boot_id) btime $(awk '/^btime/ {print $2}' /proc/stat) date $(date +%s.%N)" >> $O/boots.txt
modprobe zfs
# shellcheck source=lib/series.sh
. /mnt/host/lib/series.sh
views() { zpool status -gp rb > "$1/cli/zpool-status-g.txt" 2>&1; }
cat > /tmp/zpulse.toml <<TOML
interval = "10s"
[plugins]
dirs = []
[history]
dir = "/var/lib/zpulse-history"
[[sink]]
type = "stdout"
TOML
start() {
  fio --name=w --directory=/rb --rw=write --bs=64k --size=256m --rate=1m --time_based \
      --runtime=1800 > /dev/null 2>&1 &
  echo "start$n $(date +%s.%N)" >> $O/times.txt
  $Z run --config /tmp/zpulse.toml > $O/run$n.jsonl 2> $O/run$n.err &
  sleep 20
}
if [[ $n == 1 ]]; then
  zpool create -f rb mirror sdc sdd
  start
  series 2 10 views 0
  sleep 20
  # kexec_file_load(2) of this kernel with this command line (x86_64 syscall 320).
  python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
release = os.uname().release
kernel = os.open("/boot/vmlinuz-" + release, os.O_RDONLY)
initrd = os.open("/boot/initrd.img-" + release, os.O_RDONLY)
cmdline = open("/proc/cmdline", "rb").read().strip() + b"\0"
if libc.syscall(320, kernel, initrd, ctypes.c_ulong(len(cmdline)), cmdline, ctypes.c_ulong(0)) != 0:
    raise OSError(ctypes.get_errno(), "kexec_file_load")
PY
  cat /sys/kernel/kexec_loaded
  echo "reboot $(date +%s.%N)" >> $O/times.txt
  # Through systemd's own socket, as poweroff: `systemctl kexec` asks logind over D-Bus,
  # which this image lacks.
  systemctl start kexec.target --job-mode=replace-irreversibly --no-block
  sleep 600
  echo "still running: the reboot did not happen"
  exit 1
fi
zpool list rb || zpool import rb
zpool status -p rb
start
series 2 10 views 2
sleep 25
kill %1 %2; wait %1 %2  # not a bare wait: it would wait for the tee above too
echo "stop$n $(date +%s.%N)" >> $O/times.txt
cp -r /var/lib/zpulse-history $O/history
zpool destroy rb
echo scenario done
