#!/bin/sh
# shrink-table.sh: for each named sweep mutant of the catalog, build the
# relay with the mutant's overlay (as the mutants harness does), find the
# first failing run (seeds 1, 2, ... in the mutant's modes, then the
# seed's mode-equivalence check, as the sweep suite orders them), shrink
# it with `relaysim shrink` (-equiv for an equivalence failure, which
# writes the two-mode story; a leftover-goroutine failure shrinks in child
# processes by itself: -isolate), write it
# as a story (-o) and replay that, and print a Markdown row: sizes before
# -> after, the shrink's wall time, and whether the story fails on the
# property under the overlay and passes without it.
#
#   make shrink-table SHRINK_MUTANTS="gap-not-filled no-dedup"
#
# One mutant at a time, one run at a time (-j 1 in spirit): the numbers
# are for a shared 2-core machine. Env: SHRINK_BUDGET (default 3m),
# SHRINK_SEEDS (how many seeds to look through, default 20), OUT (a
# directory for the binaries, overlays and outputs, default
# out/_shrink-table: the overlays' mutated .go files must stay out of
# ./... , which skips directories whose names start with an underscore).
set -eu
budget=${SHRINK_BUDGET:-3m}
seeds=${SHRINK_SEEDS:-20}
out=${OUT:-out/_shrink-table}
mkdir -p "$out/tmp"
out=$(cd "$out" && pwd)
go build -o "$out/relaysim" ./cmd/relaysim
echo "| mutant | property | failing run | actions | faults | nodes | users | trace lines | runs | shrink | story |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for m in "$@"; do
	# The overlay goes under $out, not the shared temporary directory
	# (mutants.Dir): another checkout applying the same mutant there
	# would point the overlay at its own files.
	line=$(TMPDIR="$out/tmp" "$out/relaysim" mutants -only "$m" -overlay)
	overlay=$(printf '%s' "$line" | cut -f2)
	prop=$(printf '%s' "$line" | cut -f3)
	suite=$(printf '%s' "$line" | cut -f4)
	modes=$(printf '%s' "$line" | cut -f5 | tr , ' ')
	args=$(printf '%s' "$line" | cut -f6)
	if [ "$suite" != sweep ]; then
		echo "| $m | $prop | - (suite $suite: not a sweep mutant) | | | | | | | | |"
		continue
	fi
	bin="$out/$m"
	go build -overlay="$overlay" -o "$bin" ./cmd/relaysim
	found=""
	s=1
	while [ -z "$found" ] && [ "$s" -le "$seeds" ]; do
		seed=$(printf '0x%x' "$s")
		for mode in $modes; do
			# shellcheck disable=SC2086
			if "$bin" run -seed "$seed" -mode "$mode" $args 2>/dev/null | grep -q "\"violations\":\[[^]]*\"$prop\""; then
				found="$seed $mode"
				break
			fi
		done
		# shellcheck disable=SC2086
		if [ -z "$found" ] && "$bin" equiv -seed "$seed" $args 2>/dev/null | grep -q "\"violations\":\[[^]]*\"$prop\""; then
			found="$seed equiv"
			# A calm run that fails on its own shrinks alone (a third of
			# the runs of -equiv).
			for mode in single bulk stream; do
				if "$bin" run -seed "$seed" -mode "$mode" -calm $args 2>/dev/null | grep -q "\"violations\":\[[^]]*\"$prop\""; then
					found="$seed calm-$mode"
					break
				fi
			done
		fi
		s=$((s + 1))
	done
	if [ -z "$found" ]; then
		echo "| $m | $prop | none in seeds 1-$seeds | | | | | | | | |"
		continue
	fi
	seed=${found% *}
	mode=${found#* }
	if [ "$mode" = equiv ]; then
		sel="-equiv"
		run="equiv -seed $seed"
	elif [ "${mode#calm-}" != "$mode" ]; then
		sel="-mode ${mode#calm-} -calm"
		run="${mode#calm-} -calm -seed $seed"
	else
		sel="-mode $mode"
		run="$mode -seed $seed"
	fi
	# shellcheck disable=SC2086
	"$bin" shrink -seed "$seed" $sel $args -property "$prop" -budget "$budget" -o "$out/$m.story.txt" >"$out/$m.txt" 2>"$out/$m.err" || true
	before=$(grep '^before:' "$out/$m.txt" || true)
	after=$(grep '^after:' "$out/$m.txt" || true)
	if [ -z "$after" ]; then
		echo "| $m | $prop | $run | shrink failed: $(tail -1 "$out/$m.err") | | | | | | | |"
		continue
	fi
	v() { printf '%s' "$1" | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }
	took=$(sed -n 's/^took: *\([^,]*\), \([0-9]*\) candidate runs.*/\1 \2/p' "$out/$m.txt")
	# The story (-o) replayed under the same build: does it fail on the
	# property? (A pure mode-equivalence story holds on its own.)
	story="no"
	if [ -f "$out/$m.story.txt" ] && "$bin" replay -story "$out/$m.story.txt" 2>/dev/null | grep -q "\"violations\":\[[^]]*\"$prop\""; then
		story="fails on $prop"
		# ... and on main (this checkout without the overlay)?
		if "$out/relaysim" replay -story "$out/$m.story.txt" >/dev/null 2>&1; then
			story="$story, passes on main"
		else
			story="$story, fails on main too"
		fi
	fi
	budgeted=""
	grep -q 'stopped by the budget' "$out/$m.txt" && budgeted=" (budget)"
	echo "| $m | $prop | $run $args | $(v "$before" actions) → $(v "$after" actions) | $(v "$before" faults) → $(v "$after" faults) | $(v "$before" nodes) → $(v "$after" nodes) | $(v "$before" users) → $(v "$after" users) | $(v "$before" trace-lines) → $(v "$after" trace-lines) | ${took#* } | ${took% *}$budgeted | $story |"
done
