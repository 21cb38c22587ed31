#!/usr/bin/env bash
# guided_vs_plain.sh: runs until a sweep mutant is caught, a plain sweep
# against a guided search (issue 29; BENCHMARKS.md, "Guided sweeps").
#
# usage: experiments/guided_vs_plain.sh [-r RUNNER] [-o OUTDIR] [-m MODE] MUTANT...
#
#   -r RUNNER  the relaysim runner to use (default: "go tool relaysim"); e.g. a
#              binary built with `go build -o /tmp/relaysim ./cmd/relaysim`
#   -o OUTDIR  where each command's output is kept (default: a fresh temp dir);
#              run again with the same OUTDIR, it reuses the sweeps and searches
#              that finished there (a stopped script resumes)
#   -m MODE    the mode to run every mutant in (default: the mutant's own, below)
#
# Run it from anywhere inside the module (it cds to the module root: -mutant
# builds the runner from the source tree). Everything runs at -j 1, one command
# at a time; runs until caught count runs, so machine load does not change them.
#
# For each mutant (relaysim mutants -list: its second column is the property
# that must catch it; only its failures count):
#
#   mode     the first mode of the catalog file's "modes:" line, stream when the
#            line is absent or names stream. The catalog's "args:" are NOT passed:
#            both sides search run's default world.
#   catch    a run that fails with the property on the mutant's runner, and
#            passes it when run again without the mutant (relaysim run with the
#            same arguments: check below); a failure the relay has anyway is not
#            the mutant's.
#   plain    relaysim sweep -seeds A-B -mode M -equiv=false -churn-variant=false
#            -j 1 -mutant NAME, four trials starting at seeds 1, 21, 41, 61, each
#            swept 5 seeds at a time and stopped at its first catch; runs until
#            caught = that seed - start + 1, ">20" if seeds start..start+19
#            catch nothing.
#   guided   relaysim guide -corpus <fresh dir> -runs 40 -mode M -seed S -j 1
#            -mutant NAME for S = 1..4; runs until caught = the number of the
#            first run (its line's number, in the search's order) that catches it
#            (its corpus entry says "# failed: violation ..." naming the property,
#            and the check passes; the search's process group is stopped, SIGSTOP,
#            while the check runs); the search is ended there (SIGTERM). ">40" if
#            none of its 40 runs does.
#
# Output: one line per mutant on stdout,
#   NAME MODE PROPERTY | plain p1 p2 p3 p4 median M | guided g1 g2 g3 g4 median M | ratio R
# the median of four is the mean of the middle two; a capped trial (">20")
# counts as its cap and marks the median ">" when it is one of the middle two.
# The ratio is guided median / plain median ("n/a" when both are capped).
set -euo pipefail
set -m # each background job its own process group, so a search is stopped whole

runner="go tool relaysim"
out=""
mode_override=""
while getopts "r:o:m:h" opt; do
	case $opt in
	r) runner=$OPTARG ;;
	o) out=$OPTARG ;;
	m) mode_override=$OPTARG ;;
	*) sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	echo "usage: $0 [-r RUNNER] [-o OUTDIR] [-m MODE] MUTANT..." >&2
	exit 2
fi
cd "$(dirname "$(go env GOMOD)")"
[ -n "$out" ] || out=$(mktemp -d /tmp/guided-vs-plain.XXXXXX)
mkdir -p "$out"
echo "# outputs in $out; commit $(git rev-parse --short HEAD); runner: $runner" >&2

list=$($runner mutants -list)

# median A B C D: values are numbers or ">N" (capped at N).
median() {
	printf '%s\n' "$@" | awk '
		{ c = ($0 ~ /^>/); v = $0; sub(/^>/, "", v); print v + 0, c }' |
		sort -n -k1,1 -k2,2 | awk '
		{ v[NR] = $1; c[NR] = $2 }
		END {
			m = (v[2] + v[3]) / 2
			printf "%s%g\n", (c[2] || c[3]) ? ">" : "", m
		}'
}

# ratio G P: guided median over plain median.
ratio() {
	local g=$1 p=$2
	case "$g|$p" in
	\>*\|\>*) echo "n/a" ;;
	\>*) awk -v g="${g#>}" -v p="$p" 'BEGIN { printf ">%.2g\n", g / p }' ;;
	*\|\>*) awk -v g="$g" -v p="${p#>}" 'BEGIN { printf "<%.2g\n", g / p }' ;;
	*) awk -v g="$g" -v p="$p" 'BEGIN { printf "%.2g\n", g / p }' ;;
	esac
}

# caught FILE PROPERTY: the seeds (decimal) of a sweep's output whose FAIL
# block has a "violated: PROPERTY:" line.
caught() {
	awk -v prop="$2" '
		/^FAIL seed=/ { s = $2; sub(/^seed=/, "", s) }
		/^  violated: / { p = $2; sub(/:$/, "", p); if (p == prop && s != "") print s }
	' "$1" | while read -r s; do echo $((s)); done | sort -nu
}

# check PROPERTY ARGS...: true when `relaysim run ARGS` on the runner without
# the mutant does not violate PROPERTY, so a failure of the mutant's runner
# there is the mutant's. (Some runs of run's world fail timely-live-delivery on
# the unmutated relay too; such a run catches nothing.) Checks are kept in
# OUTDIR/checks, by their command line.
check() {
	local prop=$1 key c
	shift
	key=$(printf '%s ' "$prop" "$@" | md5sum | cut -c1-16)
	c="$out/checks/$key"
	mkdir -p "$out/checks"
	if [ ! -s "$c" ]; then
		echo "run $*" >"$c.cmd"
		$runner run "$@" >"$c.out" 2>&1 || true
		if grep -q "violated: $prop:" "$c.out"; then echo reject >"$c"; else echo accept >"$c"; fi
	fi
	[ "$(cat "$c")" = accept ]
}

# replay_args FILE SEED: the run arguments of a sweep output's FAIL block of
# SEED (decimal), from its replay line.
replay_args() {
	awk -v want="$(printf '0x%x' "$2")" '
		/^FAIL seed=/ { s = $2; sub(/^seed=/, "", s); on = (s == want) }
		on && /^  replay: / { sub(/.* relaysim replay /, ""); sub(/ -trace trace.txt$/, ""); print; exit }
	' "$1"
}

plain() { # NAME MODE PROPERTY: sets res to the four trial values
	local name=$1 mode=$2 prop=$3 s c a b f seed hit
	res=()
	for s in 1 21 41 61; do
		hit=">20"
		for c in 0 5 10 15; do
			a=$((s + c)) b=$((s + c + 4))
			f="$out/$name.plain.$a-$b.txt"
			if [ ! -s "$f.done" ]; then
				$runner sweep -seeds "$a-$b" -mode "$mode" -equiv=false -churn-variant=false \
					-j 1 -mutant "$name" >"$f" 2>"$f.err" || true
				echo done >"$f.done"
			fi
			for seed in $(caught "$f" "$prop"); do
				# shellcheck disable=SC2046
				if check "$prop" $(replay_args "$f" "$seed"); then
					hit=$((seed - s + 1))
					break
				fi
			done
			[ "$hit" = ">20" ] || break
		done
		res+=("$hit")
	done
}

# scan FILE CORPUS PROPERTY PID: the first F line of a search's output whose
# corpus entry names PROPERTY and whose run passes check, into hit; seen
# keeps the lines already looked at. With a PID (a search still running),
# the search's process group is stopped during a check and ended on a hit.
scan() {
	local f=$1 corpus=$2 prop=$3 pid=$4 line n h
	while read -r line; do
		n=$(awk '{ print $2 }' <<<"$line")
		case "$seen" in *" $n "*) continue ;; esac
		h=$(sed -n 's/.*  -> \([0-9a-f]*\).*/\1/p' <<<"$line")
		if [ -n "$h" ]; then
			for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$corpus/$h" ] && break; sleep 0.2; done
			if grep -Eq "^# failed: violation (.*,)?$prop(,|\$)" "$corpus/$h" 2>/dev/null; then
				[ -z "$pid" ] || kill -STOP -- "-$pid" 2>/dev/null || true
				# shellcheck disable=SC2046
				if check "$prop" $(sed 's/.* relaysim run //; s/  -> .*//' <<<"$line"); then
					hit=$n
					[ -z "$pid" ] || { kill -TERM -- "-$pid" 2>/dev/null; kill -CONT -- "-$pid" 2>/dev/null; } || true
					return
				fi
				[ -z "$pid" ] || kill -CONT -- "-$pid" 2>/dev/null || true
			fi
		fi
		seen="$seen$n "
	done < <(grep '^F ' "$f" || true)
}

# guided is not run in a $(...) subshell: a subshell has no job control, and
# the search must be its own process group to be stopped whole.
guided() { # NAME MODE PROPERTY: sets res to the four search values
	local name=$1 mode=$2 prop=$3 S corpus f pid alive
	res=()
	for S in 1 2 3 4; do
		f="$out/$name.guided.$S.txt"
		hit="" seen=" "
		if [ -s "$f.checked" ]; then # measured before (the outputs are kept): not again
			res+=("$(cat "$f.checked")")
			continue
		fi
		corpus=$(ls -d "$out/$name.corpus-$S"* 2>/dev/null | head -1 || true)
		if [ -s "$f" ] && [ -n "$corpus" ]; then # a search stopped or finished before
			scan "$f" "$corpus" "$prop" ""
			if [ -z "$hit" ] && grep -q '^runs: ' "$f"; then hit=">40"; fi
		fi
		if [ -z "$hit" ]; then
			rm -rf "$out/$name.corpus-$S"*
			corpus=$out/$name.corpus-$S
			mkdir "$corpus"
			seen=" "
			$runner guide -corpus "$corpus" -runs 40 -mode "$mode" -seed "$S" -j 1 \
				-mutant "$name" >"$f" 2>"$f.err" &
			pid=$!
			while :; do
				alive=1
				kill -0 "$pid" 2>/dev/null || alive=0
				scan "$f" "$corpus" "$prop" "$pid"
				[ -z "$hit" ] && [ $alive = 1 ] || break
				sleep 0.5
			done
			wait "$pid" 2>/dev/null || true
		fi
		echo "${hit:->40}" >"$f.checked"
		res+=("${hit:->40}")
	done
}

for name in "$@"; do
	prop=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$list")
	if [ -z "$prop" ]; then
		echo "$name: not in the catalog" >&2
		exit 2
	fi
	mode=$mode_override
	if [ -z "$mode" ]; then
		modes=$(sed -n 's/^modes: *//p' "mutants/catalog/$name.txtar" | head -1)
		case " $modes " in
		"  " | *" stream "*) mode=stream ;;
		*) mode=${modes%% *} ;;
		esac
	fi
	start=$(date +%s)
	plain "$name" "$mode" "$prop"
	p=("${res[@]}")
	guided "$name" "$mode" "$prop"
	g=("${res[@]}")
	pm=$(median "${p[@]}")
	gm=$(median "${g[@]}")
	echo "$name $mode $prop | plain ${p[*]} median $pm | guided ${g[*]} median $gm | ratio $(ratio "$gm" "$pm")"
	echo "# $name: $(($(date +%s) - start)) s" >&2
done
