#!/usr/bin/env bash
# db/devdb.sh: the project's own Postgres cluster for development and tests,
# used whenever DATABASE_URL is unset.
#
#   db/devdb.sh [start]   initialise once, start, ensure role and database `herald`
#   db/devdb.sh stop      stop the cluster (fast shutdown)
#   db/devdb.sh restart   restart the cluster (fast shutdown), e.g. to load new settings
#   db/devdb.sh reset     drop and recreate database `herald`, drop every herald_test*
#                         database; the cluster keeps running
#   db/devdb.sh status    say whether it runs, and the URL (exit 0 running, 3 not)
#
# Everything lives under <repo>/.data: postgres/ (the cluster), run/ (its unix
# socket), postgres.log. It listens on 127.0.0.1:54320 only and never touches a
# system cluster (Debian's "main" on 5432 included). Unix-socket connections
# are trusted and only the server's OS user can reach the socket directory;
# TCP connections need a password (scram-sha-256).
#
# As root the server runs as the OS user `postgres` (Postgres refuses root).
# If this checkout's cluster is down but another checkout's Herald cluster
# already holds the port (e.g. CI in a fresh clone on a developer machine),
# `start` uses that one and says so.
# `start` is meant to be called before every run: when the cluster is already
# up it only checks the role and database, well under a second.
#
# The cluster loads pg_stat_statements (when the server package ships it), so
# that the benchmark can count the statements each message costs. A cluster
# started before that setting existed gets it at its next restart: `start`
# restarts it once by itself when no session is connected, and otherwise
# says so and leaves it running (`restart` does it when convenient).
set -euo pipefail

readonly PORT=54320
readonly HOST=127.0.0.1
readonly MIN_MAJOR=15
readonly URL="postgres://herald:herald@${HOST}:${PORT}/herald?sslmode=disable"

# Resolve the repo from this script's own location so any cwd works.
script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
readonly ROOT="${script_dir%/*}"
readonly DATA_ROOT="$ROOT/.data"
readonly PGDATA_DIR="$DATA_ROOT/postgres"
readonly RUN_DIR="$DATA_ROOT/run"
readonly LOG_FILE="$DATA_ROOT/postgres.log"

# Every path below is absolute. Working from / keeps the server user from
# complaining that it cannot enter the caller's directory (e.g. /root).
cd /

# Connection settings from the caller's environment must not redirect our
# admin commands to some other server.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE \
	PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE PGTARGETSESSIONATTRS PGDATA

die() {
	printf 'devdb: %s\n' "$*" >&2
	exit 1
}
note() { printf 'devdb: %s\n' "$*" >&2; }

usage() {
	cat >&2 <<'EOF'
usage: db/devdb.sh [start|stop|restart|reset|status]
  start   initialise (once) and start the local cluster on 127.0.0.1:54320,
          ensure role and database "herald" (default)
  stop    stop the local cluster
  restart restart the local cluster (to load changed settings)
  reset   drop and recreate database "herald" and drop all herald_test* databases
  status  report whether the local cluster runs, and its URL
EOF
}

# --- who runs the server -----------------------------------------------------

if [[ $EUID -eq 0 ]]; then
	readonly PG_USER=postgres
else
	PG_USER="$(id -un)"
	readonly PG_USER
fi

# as_pg runs a command as the server's OS user.
as_pg() {
	if [[ $EUID -eq 0 ]]; then
		runuser -u "$PG_USER" -- "$@"
	else
		"$@"
	fi
}

# --- finding the server binaries ----------------------------------------------

BINDIR=""

has_server_bins() {
	[[ -n $1 && -x $1/initdb && -x $1/pg_ctl && -x $1/postgres ]]
}

# major_of prints the major version of the server binaries in $1 (e.g. 15).
major_of() {
	local v
	v="$("$1/postgres" --version 2>/dev/null)" || return 1 # "postgres (PostgreSQL) 15.14 (Debian ...)"
	v="${v#*) }"
	v="${v%%[!0-9]*}"
	[[ -n $v ]] || return 1
	printf '%s\n' "$v"
}

# candidate_bindirs lists directories that may hold server binaries, best first.
candidate_bindirs() {
	local d
	if command -v pg_config >/dev/null 2>&1; then
		d="$(pg_config --bindir 2>/dev/null || true)"
		[[ -n $d ]] && printf '%s\n' "$d"
	fi
	# Debian/Ubuntu layout; newest major first.
	compgen -G '/usr/lib/postgresql/*/bin' | sort -t/ -k5,5 -n -r || true
	# Other layouts (Fedora, Homebrew, ...) put initdb on PATH.
	if d="$(command -v initdb 2>/dev/null)"; then
		printf '%s\n' "${d%/*}"
	fi
}

# pick_bindir sets BINDIR. An existing cluster needs the binaries of its own
# major version; a new one takes the first candidate that is new enough.
TOO_OLD=""
pick_bindir() {
	local want="" d major
	if [[ -f $PGDATA_DIR/PG_VERSION ]]; then
		want="$(<"$PGDATA_DIR/PG_VERSION")"
		# The Debian directory for that version is the surest match.
		if has_server_bins "/usr/lib/postgresql/$want/bin"; then
			BINDIR="/usr/lib/postgresql/$want/bin"
			return 0
		fi
	fi
	TOO_OLD=""
	while IFS= read -r d; do
		has_server_bins "$d" || continue
		major="$(major_of "$d")" || continue
		if [[ -n $want ]]; then
			[[ $major == "$want" ]] || continue
		elif ((major < MIN_MAJOR)); then
			TOO_OLD+=" PostgreSQL $major in $d;"
			continue
		fi
		BINDIR="$d"
		return 0
	done < <(candidate_bindirs)
	if [[ -n $want ]]; then
		local found=""
		while IFS= read -r d; do
			has_server_bins "$d" && found+=" $d ($(major_of "$d" || echo '?'))"
		done < <(candidate_bindirs)
		if [[ -n $found ]]; then
			die "the cluster in $PGDATA_DIR was made by PostgreSQL $want, but only other versions are installed:$found.
Install PostgreSQL $want's server, or delete $PGDATA_DIR (this destroys the local dev data) and run again."
		fi
	fi
	return 1
}

# need_bindir finds the binaries, installing Debian's postgresql package when
# none exist and we are root; $1 = "install" allows the install.
need_bindir() {
	if pick_bindir; then
		:
	elif [[ ${1:-} == install && $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
		note "no PostgreSQL server $MIN_MAJOR or newer found; installing Debian's postgresql package"
		# Debian's package also creates and starts its own "main" cluster on
		# port 5432; that one is left alone.
		apt-get update >&2 || die "apt-get update failed; install the postgresql package yourself, or set DATABASE_URL"
		DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2 ||
			die "apt-get install postgresql failed; install it yourself, or set DATABASE_URL"
		pick_bindir || die "installed the postgresql package but still found no PostgreSQL server $MIN_MAJOR or newer (initdb, pg_ctl, postgres)${TOO_OLD:+; found:${TOO_OLD%;}}"
	else
		local how="(Debian/Ubuntu: sudo apt-get install postgresql)"
		if [[ $EUID -eq 0 ]]; then
			how="with your system's package manager"
		fi
		die "no PostgreSQL server $MIN_MAJOR or newer found (looked at pg_config --bindir, /usr/lib/postgresql/*/bin and initdb on PATH)${TOO_OLD:+; too old:${TOO_OLD%;}}.
Install the PostgreSQL server, version $MIN_MAJOR or newer $how, then run this again; or set DATABASE_URL to a Postgres you already have."
	fi
	local major
	major="$(major_of "$BINDIR")" || die "cannot tell the version of $BINDIR/postgres"
	((major >= MIN_MAJOR)) || die "PostgreSQL $major found in $BINDIR; Herald needs $MIN_MAJOR or newer"
}

psql_bin() {
	if [[ -x $BINDIR/psql ]]; then
		printf '%s\n' "$BINDIR/psql"
	elif command -v psql >/dev/null 2>&1; then
		command -v psql
	else
		die "psql not found in $BINDIR or on PATH (Debian: apt-get install postgresql-client)"
	fi
}

# psql_admin runs the SQL on stdin as the superuser over the cluster's unix socket
# (extra arguments go to psql).
psql_admin() {
	local psql
	psql="$(psql_bin)" || exit 1
	as_pg "$psql" -X -q -v ON_ERROR_STOP=1 -h "$RUN_DIR" -p "$PORT" -U postgres -d postgres "$@"
}

# --- state --------------------------------------------------------------------

initialised() { [[ -f $PGDATA_DIR/PG_VERSION ]]; }

running() {
	initialised || return 1
	as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1
}

# accepting tells whether a running server has finished starting up: the
# status line of postmaster.pid reads "ready" only then.
accepting() {
	local st
	st="$(sed -n 8p "$PGDATA_DIR/postmaster.pid" 2>/dev/null)" || return 1
	[[ ${st//[[:space:]]/} == ready ]]
}

# wait_accepting waits for a server started by someone else to be ready.
wait_accepting() {
	local i
	for ((i = 0; i < 600; i++)); do
		accepting && return 0
		running || die "the local cluster stopped while starting; see $LOG_FILE"
		sleep 0.1
	done
	die "the local cluster is running but not ready after 60s; see $LOG_FILE"
}

# --- preparing directories ------------------------------------------------------

# owner_of prints the user owning $1 (portable: no GNU stat needed).
owner_of() {
	local line
	line="$(ls -ld -- "$1")"
	awk '{print $3}' <<<"$line"
}

# can_traverse tells whether the server user can reach $1.
can_traverse() {
	if [[ $EUID -eq 0 ]]; then
		runuser -u "$PG_USER" -- test -x "$1"
	else
		[[ -x $1 ]]
	fi
}

ensure_server_user() {
	[[ $EUID -eq 0 ]] || return 0
	id -u "$PG_USER" >/dev/null 2>&1 && return 0
	note "creating the system user $PG_USER to run the server"
	useradd --system --user-group --no-create-home --home-dir /var/lib/postgresql --shell /usr/sbin/nologin "$PG_USER" >&2 ||
		die "could not create the OS user $PG_USER (Postgres will not run as root)"
}

# check_owner stops when the cluster belongs to another OS user: its files are
# never taken over (root may only claim an empty directory).
check_owner() {
	[[ -d $PGDATA_DIR ]] || return 0
	local owner
	owner="$(owner_of "$PGDATA_DIR")"
	[[ $owner == "$PG_USER" ]] && return 0
	if [[ $EUID -eq 0 && -z "$(ls -A "$PGDATA_DIR")" ]]; then
		return 0
	fi
	if [[ $owner == postgres && $EUID -ne 0 ]]; then
		die "the local cluster in $PGDATA_DIR belongs to the OS user postgres: run db/devdb.sh as root (sudo), which runs the server as postgres"
	fi
	die "the local cluster in $PGDATA_DIR belongs to the OS user $owner: run db/devdb.sh as $owner"
}

prepare_dirs() {
	mkdir -p "$DATA_ROOT"
	if [[ $EUID -eq 0 ]]; then
		# The server user must be able to pass through every directory above
		# the cluster. Above the repo we only check; .data (which also holds
		# dev keys, each 0600) may need o+x, given by the owner of the repo.
		local d="$ROOT"
		while :; do
			if ! can_traverse "$d"; then
				die "the OS user $PG_USER cannot enter $d ($(ls -ld -- "$d" | awk '{print $1, $3}')), so it cannot run the cluster under $PGDATA_DIR.
Make the directories on the way traversable (e.g. chmod o+x $d) or set DATABASE_URL to another Postgres."
			fi
			[[ $d == / ]] && break
			d="${d%/*}"
			[[ -n $d ]] || d=/
		done
		can_traverse "$DATA_ROOT" || chmod o+x "$DATA_ROOT"
	fi
	check_owner
	mkdir -p "$PGDATA_DIR" "$RUN_DIR"
	touch "$LOG_FILE"
	if [[ $EUID -eq 0 ]]; then
		chown "$PG_USER:" "$PGDATA_DIR" "$RUN_DIR" "$LOG_FILE"
	fi
	chmod 700 "$PGDATA_DIR" "$RUN_DIR"

	# Unix socket paths are limited to 107 bytes.
	local sock="$RUN_DIR/.s.PGSQL.$PORT"
	((${#sock} <= 107)) ||
		die "the repo path is too deep for a unix socket path ($sock is ${#sock} bytes, the limit is 107); move the repo to a shorter path or set DATABASE_URL"
}

# --- initdb and settings ----------------------------------------------------------

init_cluster() {
	initialised && return 0
	if [[ -n "$(ls -A "$PGDATA_DIR")" ]]; then
		die "$PGDATA_DIR is not empty but holds no cluster (PG_VERSION is missing), probably from an interrupted initdb; delete it and run again"
	fi
	local locale=C
	if locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$'; then
		locale=C.UTF-8
	fi
	note "creating the local cluster in $PGDATA_DIR (PostgreSQL $(major_of "$BINDIR"), locale $locale)"
	local out
	if ! out="$(as_pg "$BINDIR/initdb" -D "$PGDATA_DIR" -U postgres \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale="$locale" 2>&1)"; then
		printf '%s\n' "$out" >&2
		die "initdb failed"
	fi
	{
		printf '\n# Herald: the settings in herald.conf win over the ones above.\n'
		printf '# db/devdb.sh rewrites that file whenever it starts the cluster.\n'
		printf "include 'herald.conf'\n"
	} | as_pg tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
}

# has_stat_statements tells whether the server package ships
# pg_stat_statements: preloading a library that is missing stops the server
# from starting at all.
has_stat_statements() {
	local libdir
	libdir="$("$BINDIR/pg_config" --pkglibdir 2>/dev/null || true)"
	[[ -n $libdir && -f $libdir/pg_stat_statements.so ]]
}

# write_settings (re)writes herald.conf, so a moved repo keeps a valid socket path.
write_settings() {
	local rundir_q="${RUN_DIR//\'/\'\'}"
	local stats=""
	if has_stat_statements; then
		# Counts every statement, those inside functions and triggers too;
		# the benchmark reads them per delivered message.
		stats="shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 10000"
	fi
	as_pg tee "$PGDATA_DIR/herald.conf" >/dev/null <<EOF
# Written by db/devdb.sh on every start; edits are lost.
port = $PORT
listen_addresses = '$HOST'
unix_socket_directories = '$rundir_q'
max_connections = 300
shared_buffers = 256MB
fsync = on
$stats
EOF
}

# stat_statements_loaded tells whether the running server loaded
# pg_stat_statements at its start.
stat_statements_loaded() {
	local libs
	libs="$(printf 'SHOW shared_preload_libraries;\n' | psql_admin -At)" || return 1
	[[ $libs == *pg_stat_statements* ]]
}

# other_sessions counts the client sessions connected to the server.
other_sessions() {
	printf "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid();\n" | psql_admin -At
}

# ensure_stat_statements restarts this checkout's running cluster once when
# it has not loaded pg_stat_statements, but only while no session is
# connected: a restart would break running tests and benchmarks.
ensure_stat_statements() {
	has_stat_statements || return 0
	stat_statements_loaded && return 0
	write_settings
	local n
	n="$(other_sessions)" || return 0
	if [[ $n != 0 ]]; then
		note "pg_stat_statements is configured but the running cluster has not loaded it, and $n session(s) are connected, so it is not restarted now; run db/devdb.sh restart when nothing uses it (until then the benchmark cannot count statements)"
		return 0
	fi
	note "restarting the local cluster once to load pg_stat_statements"
	as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$LOG_FILE" -m fast -w -t 60 -s restart >&2 9>&- ||
		die "the local cluster did not restart; see $LOG_FILE"
}

# ensure_stat_statements_extension creates the extension in database herald,
# where the benchmark reads the cluster's counts when it may not create the
# extension in its own database.
ensure_stat_statements_extension() {
	has_stat_statements || return 0
	as_pg "$(psql_bin)" -X -q -v ON_ERROR_STOP=1 -h "$RUN_DIR" -p "$PORT" -U postgres -d herald \
		-c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' >/dev/null 2>&1 ||
		note "could not create the extension pg_stat_statements in database herald"
}

# --- commands -------------------------------------------------------------------

start_server() {
	write_settings
	note "starting the local cluster on $HOST:$PORT (log: $LOG_FILE)"
	# 9>&-: the server must not inherit the lock's descriptor, or it would
	# hold the lock for its whole life and block every later start.
	if ! as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$LOG_FILE" -w -t 60 -s start >&2 9>&-; then
		printf -- '--- last lines of %s ---\n' "$LOG_FILE" >&2
		tail -n 20 "$LOG_FILE" >&2 || true
		if [[ -f $PGDATA_DIR/postmaster.pid ]]; then
			note "$PGDATA_DIR/postmaster.pid exists. If no postgres process uses this cluster any more (ps -fu $PG_USER), it is stale: delete it and run again."
		fi
		if grep -qi 'address already in use' "$LOG_FILE" 2>/dev/null; then
			note "port $PORT on $HOST is taken by another program"
		fi
		die "the local cluster did not start"
	fi
}

ensure_role_and_db() {
	psql_admin <<'SQL'
SET password_encryption = 'scram-sha-256';
SELECT format('CREATE ROLE herald LOGIN CREATEDB PASSWORD %L', 'herald')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald')
\gexec
SELECT 'ALTER ROLE herald LOGIN CREATEDB NOSUPERUSER'
  FROM pg_roles
 WHERE rolname = 'herald' AND (NOT rolcanlogin OR NOT rolcreatedb OR rolsuper)
\gexec
-- The benchmark settles its bulk seeds with a CHECKPOINT before it times
-- anything (PostgreSQL 15 and later grant that through pg_checkpoint).
SELECT 'GRANT pg_checkpoint TO herald'
 WHERE EXISTS (SELECT FROM pg_roles WHERE rolname = 'pg_checkpoint')
   AND NOT pg_has_role('herald', 'pg_checkpoint', 'MEMBER')
\gexec
-- The runtime role web, worker and serve connect as: no DDL, no ownership;
-- herald migrate grants it what it needs (db/roles.go).
SELECT format('CREATE ROLE herald_app LOGIN PASSWORD %L', 'herald_app')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'herald_app')
\gexec
SELECT 'ALTER ROLE herald_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE'
  FROM pg_roles
 WHERE rolname = 'herald_app' AND (NOT rolcanlogin OR rolsuper OR rolbypassrls OR rolcreatedb OR rolcreaterole)
\gexec
SELECT 'CREATE DATABASE herald OWNER herald'
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'herald')
\gexec
SELECT 'ALTER DATABASE herald OWNER TO herald'
  FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba
 WHERE d.datname = 'herald' AND r.rolname <> 'herald'
\gexec
SQL
}

# port_serves_herald tells whether 127.0.0.1:PORT already answers as a Herald
# dev cluster (role herald, password herald): another checkout's, typically.
port_serves_herald() {
	local psql
	psql="$(psql_bin)" || return 1
	PGPASSWORD=herald PGCONNECT_TIMEOUT=3 "$psql" -X -q -w -h "$HOST" -p "$PORT" -U herald -d herald \
		-Atc 'SELECT 1' >/dev/null 2>&1
}

# listener prints, when it can tell, the command line of the process on PORT.
listener() {
	local pid
	command -v ss >/dev/null 2>&1 || return 0
	pid="$(ss -ltnpH "sport = :$PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 || true)"
	pid="${pid#pid=}"
	if [[ -n $pid && -r /proc/$pid/cmdline ]]; then
		tr '\0' ' ' <"/proc/$pid/cmdline"
	fi
}

# with_lock serialises concurrent starts (e.g. `task dev` and `task test`).
with_lock() {
	mkdir -p "$DATA_ROOT"
	if command -v flock >/dev/null 2>&1; then
		exec 9>>"$DATA_ROOT/devdb.lock"
		flock 9
	fi
}

cmd_start() {
	need_bindir install
	if ! { running && accepting; }; then
		# Slow path, one process at a time: whoever waited for the lock
		# finds the work done by the one before it.
		with_lock
		if ! running && port_serves_herald; then
			# Another checkout's cluster (say the main work tree's, while CI
			# runs in a fresh clone) holds the port: use it rather than fail.
			local who
			who="$(listener)"
			note "$HOST:$PORT is already served by another Herald dev cluster${who:+ ($who)}; using it. Run db/devdb.sh stop in its checkout to use this checkout's own."
			printf 'postgres ready: %s\n' "$URL"
			return 0
		fi
		ensure_server_user
		prepare_dirs
		init_cluster
		if running; then
			wait_accepting
		else
			start_server
		fi
	fi
	if has_stat_statements && ! stat_statements_loaded; then
		with_lock
		ensure_stat_statements
	fi
	if ! ensure_role_and_db; then
		die "could not set up role and database herald over $RUN_DIR although pg_ctl reports the cluster running; see $LOG_FILE.
If its postmaster died, run db/devdb.sh stop (or delete a stale $PGDATA_DIR/postmaster.pid) and start again."
	fi
	ensure_stat_statements_extension
	printf 'postgres ready: %s\n' "$URL"
}

cmd_restart() {
	if ! initialised; then
		die "no local cluster in $PGDATA_DIR; db/devdb.sh start creates it"
	fi
	need_bindir
	running || die "this checkout's cluster is not running; db/devdb.sh start starts it"
	with_lock
	write_settings
	note "restarting the local cluster (fast shutdown: connected sessions are ended)"
	as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$LOG_FILE" -m fast -w -t 60 -s restart >&2 9>&- ||
		die "the local cluster did not restart; see $LOG_FILE"
	ensure_stat_statements_extension
	echo "postgres restarted: $URL"
}

cmd_stop() {
	if ! initialised; then
		echo "postgres: no local cluster in $PGDATA_DIR"
		return 0
	fi
	need_bindir
	if running; then
		as_pg "$BINDIR/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 60 -s stop
		echo "postgres stopped"
	else
		echo "postgres is not running"
	fi
}

cmd_reset() {
	cmd_start >/dev/null
	running || die "this checkout's cluster is not the one on $HOST:$PORT; reset only resets this checkout's own cluster (stop the other one first)"
	psql_admin <<'SQL'
SELECT format('ALTER DATABASE %I IS_TEMPLATE false', datname)
  FROM pg_database
 WHERE datistemplate AND datname LIKE 'herald\_test%'
\gexec
SELECT format('DROP DATABASE %I WITH (FORCE)', datname)
  FROM pg_database
 WHERE datname = 'herald' OR datname LIKE 'herald\_test%'
 ORDER BY datname
\gexec
CREATE DATABASE herald OWNER herald;
SET password_encryption = 'scram-sha-256';
ALTER ROLE herald PASSWORD 'herald';
SQL
	echo "postgres reset: database herald recreated, test databases dropped: $URL"
}

cmd_status() {
	if ! initialised; then
		echo "postgres: not initialised (no cluster in $PGDATA_DIR); db/devdb.sh start creates it"
		return 3
	fi
	if ! pick_bindir; then
		echo "postgres: not running (no server binaries found)"
		return 3
	fi
	if running; then
		local pid
		pid="$(head -n 1 "$PGDATA_DIR/postmaster.pid" 2>/dev/null || echo '?')"
		echo "postgres running (pid $pid, PostgreSQL $(major_of "$BINDIR"), data $PGDATA_DIR): $URL"
		return 0
	fi
	echo "postgres not running (data $PGDATA_DIR); db/devdb.sh start starts it: $URL"
	return 3
}

main() {
	if (($# > 1)); then
		usage
		exit 2
	fi
	case "${1:-start}" in
	start | stop | restart | reset | status) check_owner ;;
	esac
	case "${1:-start}" in
	start) cmd_start ;;
	stop) cmd_stop ;;
	restart) cmd_restart ;;
	reset) cmd_reset ;;
	status) cmd_status ;;
	-h | --help | help) usage ;;
	*)
		usage
		exit 2
		;;
	esac
}

main "$@"
