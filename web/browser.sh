#!/usr/bin/env bash
# web/browser.sh: make sure headless Chromium is there for the console's
# browser tests (browser_test.go drives it with chromedp).
#
#   web/browser.sh        install Debian's `chromium` package when missing
#
# `go tool task test` runs this before `go test`, so it must be cheap when
# Chromium is already installed (one PATH look-up), and it does not fail the
# task where Chromium cannot be installed (no apt-get, not root and no
# passwordless sudo, no package mirror): it says so loudly and the browser
# tests skip themselves. Set HERALD_REQUIRE_BROWSER=1 to make that an error
# instead, here and in the tests. HERALD_CHROMIUM names a browser to use
# instead of the package; one that is not there is an error.
#
# Only Debian's own package is used: Chromium's prebuilt downloads (and
# chromedp's or Playwright's fetchers) are not reachable everywhere Herald is
# built, the package mirror is.
set -euo pipefail

# chromium_path prints the browser the tests would use, the same look-up as
# browser_test.go's: HERALD_CHROMIUM, then chromium, then chromium-browser.
chromium_path() {
	if [ -n "${HERALD_CHROMIUM:-}" ]; then
		command -v -- "$HERALD_CHROMIUM" && return 0
		return 1
	fi
	command -v chromium || command -v chromium-browser
}

# give_up explains why the browser tests will not run. It exits 0 so that the
# rest of the test suite still runs, unless HERALD_REQUIRE_BROWSER=1.
give_up() {
	local headline="NO CHROMIUM: THE BROWSER TESTS OF THE CONSOLE WILL BE SKIPPED"
	if [ "${HERALD_REQUIRE_BROWSER:-}" = 1 ]; then
		headline="NO CHROMIUM, AND HERALD_REQUIRE_BROWSER=1 FORBIDS SKIPPING THE BROWSER TESTS"
	fi
	{
		echo
		echo "################################################################################"
		echo "##  $headline"
		echo "##  why: $*"
		echo "##  fix: install Debian's package as root (apt-get install chromium), or point"
		echo "##       HERALD_CHROMIUM at a Chromium or Chrome binary."
		echo "################################################################################"
		echo
	} >&2
	if [ "${HERALD_REQUIRE_BROWSER:-}" = 1 ]; then
		exit 1
	fi
	exit 0
}

if path="$(chromium_path)"; then
	exit 0
fi
if [ -n "${HERALD_CHROMIUM:-}" ]; then
	# Named on purpose, so a mistake to fix rather than a reason to install
	# another browser; the tests fail on it too.
	echo "web/browser.sh: HERALD_CHROMIUM=$HERALD_CHROMIUM is not an executable" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	give_up "chromium is not on PATH and this system has no apt-get to install it"
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		give_up "chromium is not on PATH and installing it needs root (or passwordless sudo)"
	fi
fi

echo "browser tests: installing Debian's chromium package (once; a minute or two)..." >&2
log="$(mktemp "${TMPDIR:-/tmp}/herald-chromium-install.XXXXXX")"
trap 'rm -f "$log"' EXIT
start=$SECONDS

# apt_get runs apt-get quietly into $log. Another apt on the machine (db/devdb.sh
# installing Postgres, another checkout's test task, unattended upgrades)
# may hold a lock: dpkg's lock is waited for by apt itself, the package
# lists' lock is not, so that case is retried for up to five minutes.
apt_get() {
	local tries=0
	while :; do
		if "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
			apt-get -q -y -o DPkg::Lock::Timeout=300 "$@" >"$log" 2>&1; then
			return 0
		fi
		if ! grep -q "Could not get lock" "$log" || ((++tries > 60)); then
			return 1
		fi
		sleep 5
	done
}
if ! apt_get update; then
	tail -n 20 "$log" >&2
	give_up "apt-get update failed (output above)"
fi
if ! apt_get install chromium; then
	tail -n 20 "$log" >&2
	give_up "apt-get install chromium failed (output above)"
fi
if ! path="$(chromium_path)"; then
	give_up "apt-get installed chromium but neither chromium nor chromium-browser is on PATH"
fi
echo "browser tests: installed $("$path" --version 2>/dev/null || echo chromium) in $((SECONDS - start))s" >&2
