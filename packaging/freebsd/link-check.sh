#!/bin/sh
# Links the FreeBSD build of the agent (and the checks' plugin bundle) on Linux and checks
# that the results are FreeBSD executables: zig's FreeBSD 14 libc stubs as linker and C compiler (ring's C
# parts), then readelf on the binary. It cannot run them; it proves that every symbol the
# build needs exists in FreeBSD's libc/libthr/libm, that nothing else is needed, and that
# the kernel will accept the files (ABI note, interpreter).
#   packaging/freebsd/link-check.sh [--release]
# Needs: rustup target x86_64-unknown-freebsd, python3 -m ziglang (PyPI ziglang), readelf.
# Uses CARGO_TARGET_DIR when set.
set -eu

profile=debug
cargo_profile=
for a in "$@"; do
	case $a in
	--release) profile=release cargo_profile=--release ;;
	*) echo "usage: $0 [--release]" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
python3 -m ziglang version >/dev/null 2>&1 ||
	{ echo "link-check.sh: zig missing (python3 -m pip install ziglang)" >&2; exit 1; }
command -v readelf >/dev/null || { echo "link-check.sh: readelf missing (binutils)" >&2; exit 1; }

target=x86_64-unknown-freebsd
zig_target=x86_64-freebsd.14.0-none
# A fixed place for the wrappers and stubs: their paths are part of the build's
# configuration, so a new directory each run would rebuild everything.
tmp=${CARGO_TARGET_DIR:-$top/target}/freebsd-link
mkdir -p "$tmp"

# zig cc as C compiler and linker; rustc adds its own target and width flags, which zig
# takes from -target instead.
cat >"$tmp/cc" <<EOF
#!/bin/sh
for a in "\$@"; do
	shift
	case \$a in
	--target=*|-m64) ;;
	*) set -- "\$@" "\$a" ;;
	esac
done
exec python3 -m ziglang cc -target $zig_target "\$@"
EOF
cat >"$tmp/ar" <<'EOF'
#!/bin/sh
exec python3 -m ziglang ar "$@"
EOF
chmod +x "$tmp/cc" "$tmp/ar"

# Rust's std for FreeBSD names -lkvm -lprocstat -ldevstat -lmemstat (libc crate), which
# zig has no stubs for. Empty libraries satisfy the linker as long as nothing in them is
# used; a symbol from one of them would fail the link, and a NEEDED entry is checked below.
stubs="kvm procstat devstat memstat"
: >"$tmp/empty.c"
for l in $stubs; do
	[ -f "$tmp/lib$l.so" ] || "$tmp/cc" -shared -o "$tmp/lib$l.so" "$tmp/empty.c"
done

upper=$(echo "$target" | tr 'a-z-' 'A-Z_')
under=$(echo "$target" | tr '-' '_')
env "CARGO_TARGET_${upper}_LINKER=$tmp/cc" "CC_$under=$tmp/cc" "AR_$under=$tmp/ar" \
	"CARGO_TARGET_${upper}_RUSTFLAGS=-L $tmp" \
	cargo build --locked --quiet --target "$target" $cargo_profile \
	--manifest-path "$top/Cargo.toml" -p zpulse-agent -p zpulse-checks

out=${CARGO_TARGET_DIR:-$top/target}/$target/$profile
fails=0
check() { # file exe|lib
	f=$1
	h=$(readelf -h "$f")
	d=$(readelf -d "$f")
	ok=1
	what=
	echo "$h" | grep -q "Machine:.*X86-64" || { echo "FAIL $f: not x86-64"; ok=0; }
	if [ "$2" = exe ]; then
		# The kernel brands an executable by its ABI tag note before EI_OSABI
		# (sys/kern/imgact_elf.c, get_brandinfo): owner "FreeBSD", type 1
		# (NT_FREEBSD_ABI_TAG), the __FreeBSD_version it was built for. zig leaves
		# EI_OSABI at 0 (System V); the note is what matters.
		tag=$(readelf -n "$f" | awk '
			/^ *FreeBSD / && !seen { seen = 1; getline; print $6 $5 $4 $3 }')
		if [ -n "$tag" ]; then
			what="executable for __FreeBSD_version $(printf '%d' "0x$tag")"
		else
			echo "FAIL $f: no FreeBSD ABI tag note"; ok=0
		fi
		readelf -l "$f" | grep -q "interpreter: /libexec/ld-elf.so.1" ||
			{ echo "FAIL $f: interpreter is not /libexec/ld-elf.so.1"; ok=0; }
	else
		echo "$h" | grep -q "Type:.*DYN" || { echo "FAIL $f: not a shared object"; ok=0; }
		what="shared object"
	fi
	for l in $stubs; do
		if echo "$d" | grep -q "NEEDED.*lib$l\.so"; then
			echo "FAIL $f needs lib$l, which only the empty stub provided"; ok=0
		fi
	done
	needed=$(echo "$d" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
	if [ $ok = 1 ]; then
		echo "ok   ${f#"$out"/}: x86-64 FreeBSD $what, needs $needed"
	else
		fails=$((fails + 1))
	fi
}
check "$out/zpulse" exe
check "$out/libzpulse_checks.so" lib
[ $fails -eq 0 ]
