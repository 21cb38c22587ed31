#!/bin/sh
# shrunk-stories.sh: every scenarios/testdata/shrunk/bugN-<mutant>.txt is a
# shrunk real failure. It passes on main (go test ./scenarios plays it);
# this shows it fails again, on the property it names, when its bug is put
# back with the catalog mutant's overlay.
#
#   make shrunk-stories
set -eu
out=${OUT:-out/_shrunk-stories}
mkdir -p "$out/tmp"
out=$(cd "$out" && pwd)
go build -o "$out/relaysim" ./cmd/relaysim
fail=0
for f in scenarios/testdata/shrunk/bug*-*.txt; do
	m=$(basename "$f" .txt)
	m=${m#bug*-}
	line=$(TMPDIR="$out/tmp" "$out/relaysim" mutants -only "$m" -overlay)
	overlay=$(printf '%s' "$line" | cut -f2)
	prop=$(printf '%s' "$line" | cut -f3)
	go build -overlay="$overlay" -o "$out/relaysim-$m" ./cmd/relaysim
	"$out/relaysim" replay -story "$f" >/dev/null 2>&1 || { echo "$f: fails on main"; fail=1; continue; }
	if "$out/relaysim-$m" replay -story "$f" >"$out/$m.txt" 2>&1; then
		echo "$f: passes with $m put back"; fail=1
	elif grep -q "^violated: $prop:" "$out/$m.txt"; then
		echo "$f: passes on main, fails on $prop with $m put back"
	else
		echo "$f: fails with $m put back, but not on $prop"; fail=1
	fi
done
exit $fail
