#!/usr/bin/env bash
# Replay at cluster scale (issue 7): generate a realistic audit log of BENCH_EVENTS events
# (default 1,000,000, about 2 GB) with `vapc-bench gen-audit` (internal/cmd/vapc-bench, the
# benchmark tooling kept out of the product binary), then measure, each with wall time and peak
# RSS:
#   - the decode floor: `vapc-bench decode-floor` reads the log with bufio and decodes every line with
#     encoding/json into the audit Event fields (objects as json.RawMessage), on one goroutine;
#   - the replay: `vapc replay --policies policies/ --snapshot SNAPSHOT LOG`;
#   - the replay with its HTML report: the same with `--report .cache/bench/report.html`.
# and prints events/s, MB/s, peak RSS and replay/floor (the replay's speed over the floor's;
# the target is >= 1.0, and peak RSS under 500 MB for a 2 GB log), and the report's size (the
# target is under 10 MB) and what writing it adds to the replay's time. Then, each against its
# floor in the same run:
#   - RequestResponse traffic: the recording of a real kube-apiserver (verify/replay/testdata/
#     recorded/a, every request at RequestResponse) repeated BENCH_RR_TIMES times (default 260,
#     about 360 MB), each repetition shifted in time and versions (vapc-bench repeat), against its decode floor
#     (target >= 1.5);
#   - a cluster's mixed traffic: testdata/bench/cluster-traffic.log.gz (recorded by
#     TestRecordClusterTraffic: kube-controller-manager, kube-scheduler, played kubelets, under a
#     production-like audit policy) repeated BENCH_CLUSTER_TIMES times (default 40), against its
#     decode floor (target >= 4);
#   - 10,000 pod CREATEs through one policy of two rules, half violating (vapc-bench pods),
#     against kube-apiserver's validating dispatcher called once per pod (vapc-bench
#     library-floor; target >= 3);
#   - start-up: a replay of a one-event log (target < 0.5 s).
#
# The log and its snapshot go to .cache/bench/ (gitignored) and are reused while the seed, the
# size and the generator's source are the same. Environment:
#   BENCH_EVENTS  events to generate (default 1000000)
#   BENCH_SEED    generator seed (default 1)
#   BENCH_DIR     where the log goes (default .cache/bench)
#   BENCH_RR_TIMES, BENCH_CLUSTER_TIMES, BENCH_PODS  the sizes of the other workloads
#   GO            the go command (default go)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

events=${BENCH_EVENTS:-1000000}
seed=${BENCH_SEED:-1}
dir=${BENCH_DIR:-.cache/bench}
go=${GO:-go}
vapc=bin/vapc
bench=bin/vapc-bench

case $events in '' | *[!0-9]*) echo "bench: BENCH_EVENTS must be a number of events, not '$events'" >&2; exit 2 ;; esac
case $seed in '' | *[!0-9]*) echo "bench: BENCH_SEED must be a number, not '$seed'" >&2; exit 2 ;; esac

mkdir -p "$dir" bin
echo "bench: building $vapc and $bench"
"$go" build -o "$vapc" ./cmd/vapc
"$go" build -o "$bench" ./internal/cmd/vapc-bench

log=$dir/audit-seed$seed-$events.log
snapshot=$dir/snapshot-seed$seed-$events.yaml
# The generator's fingerprint: a change to it regenerates the log.
fingerprint=$(cat internal/auditgen/*.go internal/cmd/vapc-bench/genaudit.go | sha256sum | cut -c1-16)
params="seed=$seed events=$events generator=$fingerprint"

# measure NAME CMD...: runs CMD with stdout to $dir/NAME.out; sets wall (s) and rss (MB).
measure() {
	local name=$1
	shift
	local out=$dir/$name.out
	if [[ -x /usr/bin/time ]]; then
		local tf=$dir/$name.time
		local rc=0
		/usr/bin/time -f '%e %M' -o "$tf" "$@" >"$out" 2>"$dir/$name.err" || rc=$?
		if [[ $rc -gt 1 ]]; then # 1 is a finding (vapc exit codes), not a failure
			echo "bench: $name failed (exit $rc):" >&2
			tail -n 20 "$dir/$name.err" >&2
			return 1
		fi
		read -r wall rss_kb < <(tail -n 1 "$tf")
		rss=$((rss_kb / 1024))
	else
		# No GNU time: poll the process's high-water mark.
		local start end hwm=0 pid rc=0
		start=$(date +%s.%N)
		"$@" >"$out" 2>"$dir/$name.err" &
		pid=$!
		while kill -0 "$pid" 2>/dev/null; do
			local v
			v=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
			[[ -n $v && $v -gt $hwm ]] && hwm=$v
			sleep 0.2
		done
		wait "$pid" || rc=$?
		end=$(date +%s.%N)
		if [[ $rc -gt 1 ]]; then
			echo "bench: $name failed (exit $rc):" >&2
			tail -n 20 "$dir/$name.err" >&2
			return 1
		fi
		wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.2f", b - a}')
		rss=$((hwm / 1024))
	fi
}

if [[ -f $log && -f $snapshot && -f $log.params && $(cat "$log.params") == "$params" ]]; then
	echo "bench: reusing $log ($params)"
	gen_line="(reused)"
else
	echo "bench: generating $log ($params)"
	rm -f "$log.params"
	measure gen-audit "$bench" gen-audit --seed "$seed" --events "$events" --snapshot "$snapshot.tmp" -o "$log.tmp"
	mv "$snapshot.tmp" "$snapshot"
	mv "$log.tmp" "$log"
	echo "$params" >"$log.params"
	gen_line="$(tail -n 1 "$dir/gen-audit.err") (peak RSS ${rss} MB)"
fi

bytes=$(stat -c %s "$log")
lines=$(grep -o 'events=[0-9]*' "$log.params" | cut -d= -f2)
mb=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1e6}')

# rate WALL: prints "events/s MB/s".
rate() { awk -v w="$1" -v n="$lines" -v b="$bytes" 'BEGIN {if (w <= 0) w = 0.01; printf "%9.0f %8.1f", n / w, b / 1e6 / w}'; }

echo "bench: warming the page cache"
cat "$log" >/dev/null

echo "bench: decode floor"
measure floor "$bench" decode-floor "$log"
floor_wall=$wall floor_rss=$rss

replay_ok=
if ! "$vapc" replay --help >/dev/null 2>&1; then
	replay_why="bin/vapc has no replay verb yet (verify/replay, cmd/vapc/replay.go)"
elif ! compgen -G 'policies/*.yaml' >/dev/null; then
	replay_why="no in-tree policies in policies/"
else
	echo "bench: replay"
	if measure replay "$vapc" replay --policies policies/ --snapshot "$snapshot" "$log"; then
		replay_ok=1 replay_wall=$wall replay_rss=$rss
	else
		replay_why="the replay failed (see $dir/replay.err)"
	fi
fi

report_ok=
if [[ -n $replay_ok ]]; then
	echo "bench: replay with --report"
	rm -f "$dir/report.html"
	if measure report "$vapc" replay --policies policies/ --snapshot "$snapshot" --report "$dir/report.html" "$log" && [[ -f $dir/report.html ]]; then
		report_ok=1 report_wall=$wall report_rss=$rss
		report_mb=$(awk -v b="$(stat -c %s "$dir/report.html")" 'BEGIN {printf "%.1f", b / 1e6}')
	fi
fi

{
	echo
	echo "== vapc replay benchmark: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(go env GOVERSION)"
	echo "log:       $log: $lines events, $mb MB (seed $seed)"
	echo "generated: $gen_line"
	printf '%-8s %8s %9s %8s %10s\n' "" "wall s" "events/s" "MB/s" "peak RSS"
	printf '%-8s %8s %s %7s MB\n' floor "$floor_wall" "$(rate "$floor_wall")" "$floor_rss"
	if [[ -n $replay_ok ]]; then
		printf '%-8s %8s %s %7s MB\n' replay "$replay_wall" "$(rate "$replay_wall")" "$replay_rss"
		awk -v f="$floor_wall" -v r="$replay_wall" -v rss="$replay_rss" -v mb="$mb" 'BEGIN {
			ratio = (r > 0) ? f / r : 0
			speed = "NOT met"; if (ratio >= 1.0) speed = "met"
			memory = "NOT met"; if (rss + 0 < 500) memory = "met"
			printf "replay/floor: %.2f (target >= 1.0: %s)\n", ratio, speed
			printf "replay peak RSS: %d MB for %.0f MB of log (target < 500 MB for 2 GB: %s)\n", rss, mb, memory
		}'
		if [[ -n $report_ok ]]; then
			printf '%-8s %8s %s %7s MB\n' report "$report_wall" "$(rate "$report_wall")" "$report_rss"
			awk -v r="$replay_wall" -v w="$report_wall" -v mb="$report_mb" 'BEGIN {
				size = "NOT met"; if (mb + 0 < 10) size = "met"
				printf "report: %.1f MB (target < 10 MB: %s), writing it adds %+.1f%% to the replay'"'"'s wall time\n", mb, size, (r > 0) ? (w / r - 1) * 100 : 0
			}'
		else
			echo "report:   the replay with --report failed (see $dir/report.err)"
		fi
		echo "replay summary (first lines of $dir/replay.out):"
		head -n 12 "$dir/replay.out" | sed 's/^/  /'
	else
		echo "replay:   skipped: $replay_why"
	fi
} | tee "$dir/results.txt"

# ---- the other workloads: each against its floor, in this run --------------------------------

rr_times=${BENCH_RR_TIMES:-260}
cluster_times=${BENCH_CLUSTER_TIMES:-40}
pods=${BENCH_PODS:-10000}

# versus NAME FLOOR-WALL REPLAY-WALL TARGET RSS: prints a line of the comparison.
versus() {
	awk -v n="$1" -v f="$2" -v r="$3" -v t="$4" -v rss="$5" 'BEGIN {
		ratio = (r > 0) ? f / r : 0
		met = "NOT met"; if (ratio >= t) met = "met"
		printf "%-24s floor %7.2f s  replay %7.2f s  replay/floor %5.2f (target >= %s: %s)  peak RSS %d MB\n", n, f, r, ratio, t, met, rss
	}'
}

# The repetition's fingerprint: a change to vapc-bench repeat (how it shifts times and
# versions) repeats the logs again.
repeated=$(cat internal/cmd/vapc-bench/repeat.go | sha256sum | cut -c1-12)
rr=$dir/rr-$rr_times-$repeated.log
if [[ ! -f $rr ]]; then
	"$bench" repeat --times "$rr_times" -o "$rr" verify/replay/testdata/recorded/a/audit.log.gz
fi
cat "$rr" >/dev/null
echo "bench: RequestResponse traffic"
measure rr-floor "$bench" decode-floor "$rr"
rr_floor=$wall
measure rr-replay "$vapc" replay --quiet --disable-admission-plugins ServiceAccount --policies verify/replay/testdata/recorded/a/policies.yaml "$rr"
rr_replay=$wall rr_rss=$rss

cluster=$dir/cluster-$cluster_times-$repeated.log
if [[ ! -f $cluster ]]; then
	"$bench" repeat --times "$cluster_times" -o "$cluster" testdata/bench/cluster-traffic.log.gz
fi
cat "$cluster" >/dev/null
echo "bench: a cluster's mixed traffic"
measure cluster-floor "$bench" decode-floor "$cluster"
cluster_floor=$wall
measure cluster-replay "$vapc" replay --quiet --policies policies/ "$cluster"
cluster_replay=$wall cluster_rss=$rss

podlog=$dir/pods-$pods.log
"$bench" pods --count "$pods" --policy "$dir/pods-policy.yaml" -o "$podlog"
echo "bench: $pods pod CREATEs"
measure pods-floor "$bench" library-floor --policy "$dir/pods-policy.yaml" "$podlog"
pods_floor=$wall
measure pods-replay "$vapc" replay --quiet --policies "$dir/pods-policy.yaml" "$podlog"
pods_replay=$wall pods_rss=$rss

head -n 1 "$podlog" >"$dir/one.log"
measure startup "$vapc" replay --quiet --policies "$dir/pods-policy.yaml" "$dir/one.log"
startup=$wall

{
	echo
	echo "== against their floors: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
	versus "RequestResponse x$rr_times" "$rr_floor" "$rr_replay" 1.5 "$rr_rss"
	versus "cluster traffic x$cluster_times" "$cluster_floor" "$cluster_replay" 4 "$cluster_rss"
	versus "$pods pod CREATEs" "$pods_floor" "$pods_replay" 3 "$pods_rss"
	awk -v s="$startup" 'BEGIN { met = "NOT met"; if (s < 0.5) met = "met"; printf "start-up                 %.2f s (target < 0.5 s: %s)\n", s, met }'
} | tee -a "$dir/results.txt"
