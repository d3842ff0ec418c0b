package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cluster is a Postgres cluster the suite may restart: the project's local
// one (db/devdb.sh's, on 127.0.0.1:54320) or a throwaway one it made itself.
type cluster struct {
	adminURL string // a connection to any database of the cluster
	dataDir  string
	bindir   string
	owner    string // the OS user the server runs as; "" is the current user
	tempRoot string // set for a throwaway cluster: removed at the end
}

// localPort is the port db/devdb.sh's cluster listens on.
const localPort = "54320"

// localCluster finds the data directory and binaries of the running local
// cluster from its postmaster.pid, as db/devdb.sh would: the cluster may
// belong to this checkout or to another one that holds the port. It refuses
// a DATABASE_URL that names another server.
func localCluster(adminURL, dataDir string) (*cluster, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return nil, err
	}
	if host, port, _ := net.SplitHostPort(u.Host); !(host == "127.0.0.1" || host == "localhost") || port != localPort {
		return nil, fmt.Errorf("DATABASE_URL points at %s, not the project's local cluster (127.0.0.1:%s): a Postgres restart there is not the suite's to do", u.Host, localPort)
	}
	if dataDir == "" {
		if dataDir, err = findDataDir(localPort); err != nil {
			return nil, err
		}
	}
	c := &cluster{adminURL: adminURL, dataDir: dataDir}
	if c.bindir, err = serverBindir(dataDir); err != nil {
		return nil, err
	}
	c.owner = ownerOf(dataDir)
	return c, nil
}

// findDataDir looks at every running postgres for the one whose
// postmaster.pid names port.
func findDataDir(port string) (string, error) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) < 3 || filepath.Base(args[0]) != "postgres" {
			continue
		}
		for i, a := range args[:len(args)-1] {
			if a != "-D" {
				continue
			}
			pid, err := os.ReadFile(filepath.Join(args[i+1], "postmaster.pid"))
			if err != nil {
				continue
			}
			if lines := strings.Split(string(pid), "\n"); len(lines) > 3 && strings.TrimSpace(lines[3]) == port {
				return args[i+1], nil
			}
		}
	}
	return "", fmt.Errorf("found no running postgres on port %s (start it with `bash db/devdb.sh start`, or name its data directory with --pgdata)", port)
}

// serverBindir is the directory of the binaries a data directory's server
// runs (its postmaster's executable), else the newest Debian-style one.
func serverBindir(dataDir string) (string, error) {
	if dataDir != "" {
		if pid, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid")); err == nil {
			if exe, err := os.Readlink("/proc/" + strings.TrimSpace(strings.SplitN(string(pid), "\n", 2)[0]) + "/exe"); err == nil {
				if d := filepath.Dir(exe); hasServerBins(d) {
					return d, nil
				}
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append([]string{strings.TrimSpace(string(out))}, dirs...)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if hasServerBins(d) {
			return d, nil
		}
	}
	return "", errors.New("found no PostgreSQL server binaries (initdb, pg_ctl) where db/devdb.sh looks")
}

func majorOf(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

func hasServerBins(d string) bool {
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		if st, err := os.Stat(filepath.Join(d, b)); err != nil || st.IsDir() {
			return false
		}
	}
	return true
}

// ownerOf is the name of the user owning path, when the suite runs as root
// and must run pg_ctl as that user (Postgres refuses root).
func ownerOf(path string) string {
	if os.Geteuid() != 0 {
		return ""
	}
	st, err := os.Stat(path)
	if err != nil {
		return ""
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	u, err := user.LookupId(strconv.Itoa(int(sys.Uid)))
	if err != nil {
		return ""
	}
	return u.Username
}

// pg runs one of the cluster's binaries, as the server's user.
func (c *cluster) pg(ctx context.Context, bin string, args ...string) error {
	name, argv := filepath.Join(c.bindir, bin), args
	if c.owner != "" && c.owner != "root" {
		name, argv = "runuser", append([]string{"-u", c.owner, "--", filepath.Join(c.bindir, bin)}, args...)
	}
	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A server pg_ctl starts could inherit the output pipe and hold it open;
	// the command is done when pg_ctl exits.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, out.String())
	}
	return nil
}

// restart is `pg_ctl restart -m fast`: every session ends, and the server
// comes back with the options it was started with.
func (c *cluster) restart(ctx context.Context) error {
	// The log is where db/devdb.sh (and throwawayCluster) keep it, beside
	// the data directory.
	return c.pg(ctx, "pg_ctl", "-D", c.dataDir, "restart", "-m", "fast", "-w", "-t", "120", "-l", filepath.Join(filepath.Dir(c.dataDir), "postgres.log"))
}

// throwawayCluster makes and starts a cluster of its own under a temporary
// directory, with the binaries the local cluster uses: restarting it
// disturbs nobody else's tests.
func throwawayCluster(ctx context.Context) (*cluster, error) {
	bindir, err := serverBindir(func() string { d, _ := findDataDir(localPort); return d }())
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "herald-chaos-pg-")
	if err != nil {
		return nil, err
	}
	c := &cluster{bindir: bindir, tempRoot: root, dataDir: filepath.Join(root, "data")}
	if os.Geteuid() == 0 {
		// Postgres refuses to run as root; db/devdb.sh runs it as postgres.
		c.owner = "postgres"
		if err := exec.Command("chown", "-R", c.owner, root).Run(); err != nil {
			c.remove()
			return nil, fmt.Errorf("chown %s to postgres: %w", root, err)
		}
		_ = os.Chmod(root, 0o755)
	}
	p, err := freePort()
	if err != nil {
		c.remove()
		return nil, err
	}
	port := strconv.Itoa(p)
	if err := c.pg(ctx, "initdb", "-D", c.dataDir, "-U", "herald", "--auth=trust", "-E", "UTF8", "--no-locale"); err != nil {
		c.remove()
		return nil, err
	}
	// fsync is off: the suite restarts the server, it never crashes the
	// machine, and a fast shutdown writes everything out.
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60", port, root)
	if err := c.pg(ctx, "pg_ctl", "-D", c.dataDir, "-o", opts, "-l", filepath.Join(root, "postgres.log"), "-w", "-t", "120", "start"); err != nil {
		c.remove()
		return nil, err
	}
	c.adminURL = "postgres://herald@127.0.0.1:" + port + "/postgres?sslmode=disable"
	return c, nil
}

// remove stops and deletes a throwaway cluster; the local one is left alone.
func (c *cluster) remove() {
	if c == nil || c.tempRoot == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); err == nil {
		_ = c.pg(ctx, "pg_ctl", "-D", c.dataDir, "stop", "-m", "immediate", "-w")
	}
	_ = os.RemoveAll(c.tempRoot)
}
