#!/usr/bin/env bash
# Renders an `exactly dashboard` page in headless Chromium and saves a PNG,
# to check by eye that the charts draw in a real browser. A tool for humans
# and release notes, not part of `go test ./...`.
#
#   ci/screenshot.sh results/dashboard.html [out.png] [width,height] [scale]
#       screenshot an existing page (default out: the page's name with .png,
#       default window 1400,3000, scale 1; only the window is captured, so
#       pass a taller height for the whole page, and a scale below 1 to keep
#       the PNG small)
#
#   ci/screenshot.sh --example [dir]
#       regenerate the committed example (default dir results/examples):
#       the overhead rounds, the sustainable-rate search on the embedded
#       broker and kfake, and the standard suite (about 40 minutes in all),
#       the dashboard of the three, and a screenshot of it
#
# Installs the Debian package chromium when no chromium is on PATH (needs
# root). Chromium runs with networking features off and a throw-away
# profile; the page itself fetches nothing.
set -euo pipefail

cd "$(dirname "$0")/.."

find_chromium() {
	for name in chromium chromium-browser google-chrome; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

ensure_chromium() {
	if find_chromium >/dev/null; then
		return 0
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "screenshot: chromium is not installed; run as root or: sudo apt-get install -y chromium" >&2
		exit 1
	fi
	echo "screenshot: installing chromium" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
}

# screenshot PAGE PNG SIZE SCALE
screenshot() {
	local page png size scale profile log
	page=$(realpath "$1")
	png=$(realpath -m "$2")
	size=$3
	scale=$4
	profile=$(mktemp -d)
	log=$(mktemp)
	trap 'rm -rf "$profile" "$log"; trap - RETURN' RETURN
	if ! timeout 120 "$(find_chromium)" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
		--user-data-dir="$profile" --window-size="$size" --force-device-scale-factor="$scale" --screenshot="$png" "file://$page" >"$log" 2>&1; then
		cat "$log" >&2
		echo "screenshot: chromium failed on $page" >&2
		exit 1
	fi
	if [ ! -s "$png" ]; then
		cat "$log" >&2
		echo "screenshot: chromium wrote no $png" >&2
		exit 1
	fi
	echo "screenshot: $png ($(du -k "$png" | cut -f1) KiB, window $size, scale $scale)"
}

# example DIR: run the three loadgen runs of the example, render,
# screenshot.
example() {
	local dir=$1 work bin
	work=$(mktemp -d)
	trap 'rm -rf "$work"; trap - RETURN' RETURN
	bin="$work/exactly"
	go build -o "$bin" ./cmd/exactly
	# The overhead rounds (ratios with intervals and the A/A floor), the
	# sustainable-rate search on both targets, and the standard fault
	# matrix, whose verdicts the overhead table shows. A run that fails
	# its expectations still yields results, hence the || true.
	"$bin" loadgen --workload overhead --rounds 5 --quiet --out "$work/overhead" || true
	"$bin" loadgen --find-max --targets embedded,kfake --find-max-start 4000 --quiet --out "$work/findmax" || true
	"$bin" loadgen --quiet --out "$work/standard" || true
	mkdir -p "$dir"
	rm -f "$dir"/loadgen-*.json
	cp "$work"/overhead/*.json "$work"/findmax/*.json "$work"/standard/*.json "$dir"/
	"$bin" dashboard "$work"/overhead/*.json "$work"/findmax/*.json "$work"/standard/*.json -o "$dir/dashboard.html"
	# From the overhead table down through the charts, at 0.7 scale.
	screenshot "$dir/dashboard.html" "$dir/dashboard.png" 1400,9400 0.7
}

ensure_chromium
case "${1:-}" in
--example)
	example "${2:-results/examples}"
	;;
"" | -h | --help)
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	;;
*)
	page=$1
	png=${2:-${page%.html}.png}
	screenshot "$page" "$png" "${3:-1400,3000}" "${4:-1}"
	;;
esac
