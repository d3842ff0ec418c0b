package db_test

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
)

// TestMigrations_OnlyAdded keeps migrations append-only: every file listed in
// db/migrations/SHA256SUMS is there, unchanged, and every migration file is
// listed, a new one numbered next after the newest. A merged migration has run on databases that will not run it
// again, so editing, renaming or removing it would leave those databases
// with a schema no file describes.
func TestMigrations_OnlyAdded(t *testing.T) {
	t.Parallel()
	sums, err := os.ReadFile(filepath.Join("migrations", "SHA256SUMS"))
	require.NoError(t, err)
	require.Contains(t, string(sums), "00001_baseline.sql", "the list pins the baseline")
	for _, p := range migrationsNotOnlyAdded(db.Migrations(), sums) {
		t.Error(p)
	}
}

// TestMigrations_OnlyAddedCheck shows what the check above tells a developer
// for each way a migration can go wrong.
func TestMigrations_OnlyAddedCheck(t *testing.T) {
	t.Parallel()
	base, second := "CREATE TABLE a (id int);\n", "ALTER TABLE a ADD COLUMN b int;\n"
	merged := fstest.MapFS{
		"00001_baseline.sql": {Data: []byte(base)},
		"00002_b.sql":        {Data: []byte(second)},
	}
	sums := []byte(sumLine("00001_baseline.sql", base) + "\n" + sumLine("00002_b.sql", second) + "\n")
	with := func(change func(fstest.MapFS)) fstest.MapFS {
		files := fstest.MapFS{}
		for name, f := range merged {
			files[name] = f
		}
		change(files)
		return files
	}

	t.Run("Unchanged", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, migrationsNotOnlyAdded(merged, sums))
	})

	t.Run("Edited", func(t *testing.T) {
		t.Parallel()
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) {
			f["00002_b.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE a ADD COLUMN b bigint;\n")}
		}), sums)
		require.Len(t, problems, 1)
		require.Contains(t, problems[0], "db/migrations/00002_b.sql has changed since it was listed")
		require.Contains(t, problems[0], "a new migration numbered 00003 or later")
	})

	t.Run("Removed", func(t *testing.T) {
		t.Parallel()
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) { delete(f, "00002_b.sql") }), sums)
		require.Equal(t, []string{"db/migrations/00002_b.sql is listed in SHA256SUMS but is gone: " +
			"a merged migration is never removed or renamed; restore it as it was merged"}, problems)
	})

	t.Run("Renamed", func(t *testing.T) {
		t.Parallel()
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) {
			f["00002_column_b.sql"] = f["00002_b.sql"]
			delete(f, "00002_b.sql")
		}), sums)
		require.Len(t, problems, 2)
		require.Contains(t, problems[0], "00002_b.sql is listed in SHA256SUMS but is gone")
		require.Equal(t, "db/migrations/00002_column_b.sql is numbered 2, not after the newest merged migration (00002_b.sql): "+
			"migrations are only added, so rename it to 00003_column_b.sql", problems[1])
	})

	t.Run("New", func(t *testing.T) {
		t.Parallel()
		third := "CREATE INDEX a_b_idx ON a (b);\n"
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) {
			f["00003_index_b.sql"] = &fstest.MapFile{Data: []byte(third)}
		}), sums)
		require.Len(t, problems, 1)
		require.Contains(t, problems[0], "db/migrations/00003_index_b.sql is not in SHA256SUMS yet")
		require.True(t, strings.HasSuffix(problems[0], "\n"+sumLine("00003_index_b.sql", third)),
			"the message ends in the exact line to add: %s", problems[0])
	})

	t.Run("NumberedBelowTheNewest", func(t *testing.T) {
		t.Parallel()
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) {
			f["00002_another.sql"] = &fstest.MapFile{Data: []byte("SELECT 1;\n")}
		}), sums)
		require.Equal(t, []string{"db/migrations/00002_another.sql is numbered 2, not after the newest merged migration " +
			"(00002_b.sql): migrations are only added, so rename it to 00003_another.sql"}, problems)
	})

	t.Run("NumberedWithAGap", func(t *testing.T) {
		t.Parallel()
		// A branch made before the baseline still numbers after the
		// migrations it folded.
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) {
			f["00040_late.sql"] = &fstest.MapFile{Data: []byte("SELECT 1;\n")}
		}), sums)
		require.Equal(t, []string{"db/migrations/00040_late.sql is numbered 40, but the next migration is 00003 " +
			"(numbers follow the newest without gaps): rename it to 00003_late.sql"}, problems)
	})

	t.Run("TwoNew", func(t *testing.T) {
		t.Parallel()
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) {
			f["00003_c.sql"] = &fstest.MapFile{Data: []byte("SELECT 3;\n")}
			f["00004_d.sql"] = &fstest.MapFile{Data: []byte("SELECT 4;\n")}
			f["00004_e.sql"] = &fstest.MapFile{Data: []byte("SELECT 5;\n")}
		}), sums)
		require.Len(t, problems, 3)
		require.True(t, strings.HasSuffix(problems[0], "\n"+sumLine("00003_c.sql", "SELECT 3;\n")), problems[0])
		require.True(t, strings.HasSuffix(problems[1], "\n"+sumLine("00004_d.sql", "SELECT 4;\n")), problems[1])
		require.Equal(t, "db/migrations/00004_e.sql is numbered 4 like 00004_d.sql: rename it to 00005_e.sql", problems[2])
	})

	t.Run("NotNumbered", func(t *testing.T) {
		t.Parallel()
		problems := migrationsNotOnlyAdded(with(func(f fstest.MapFS) {
			f["index_b.sql"] = &fstest.MapFile{Data: []byte("SELECT 1;\n")}
		}), sums)
		require.Len(t, problems, 1)
		require.Contains(t, problems[0], "db/migrations/index_b.sql: a migration is named by its number")
	})

	t.Run("MalformedList", func(t *testing.T) {
		t.Parallel()
		problems := migrationsNotOnlyAdded(merged, append(slices.Clone(sums), "00003_c.sql\n"...))
		require.Equal(t, []string{"db/migrations/SHA256SUMS line 3 is not `<sha256>  <file>`: 00003_c.sql"}, problems)
	})
}

// sumLine is a line of SHA256SUMS, as sha256sum writes it.
func sumLine(name, content string) string {
	return fmt.Sprintf("%x  %s", sha256.Sum256([]byte(content)), name)
}

// migrationsNotOnlyAdded compares the migration files with the list that
// pins them (SHA256SUMS, sha256sum's format, so `sha256sum -c SHA256SUMS`
// checks it too) and says, for each difference, what the developer does.
func migrationsNotOnlyAdded(files fs.FS, sums []byte) []string {
	var problems []string
	listed := map[string]string{}
	newest, newestName := int64(-1), ""
	for i, line := range strings.Split(strings.TrimRight(string(sums), "\n"), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 || len(fields[0]) != sha256.Size*2 {
			problems = append(problems, fmt.Sprintf("db/migrations/SHA256SUMS line %d is not `<sha256>  <file>`: %s", i+1, line))
			continue
		}
		name := strings.TrimPrefix(fields[1], "*")
		listed[name] = fields[0]
		if v, ok := migrationVersion(name); ok && v > newest {
			newest, newestName = v, name
		}
	}
	present, err := fs.Glob(files, "*.sql")
	if err != nil {
		return append(problems, err.Error())
	}

	names := make([]string, 0, len(listed))
	for name := range listed {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		content, err := fs.ReadFile(files, name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("db/migrations/%s is listed in SHA256SUMS but is gone: "+
				"a merged migration is never removed or renamed; restore it as it was merged", name))
			continue
		}
		if sum := fmt.Sprintf("%x", sha256.Sum256(content)); sum != listed[name] {
			problems = append(problems, fmt.Sprintf("db/migrations/%s has changed since it was listed in SHA256SUMS: "+
				"a merged migration is never edited, because the databases it ran on will not run it again. "+
				"Put the change in a new migration numbered %05d or later. "+
				"(Only while this file is still unmerged, on your own branch, update its line to: %s)",
				name, newest+1, sum+"  "+name))
		}
	}
	// New files follow the newest listed one without gaps, so that a
	// branch made before the newest migrations (or before the baseline)
	// cannot slip in under an old number. fs.Glob sorts by name, which with
	// five-digit numbers is by number.
	next, previous := newest+1, newestName
	for _, name := range present {
		if _, ok := listed[name]; ok {
			continue
		}
		content, err := fs.ReadFile(files, name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		v, ok := migrationVersion(name)
		_, what, _ := strings.Cut(name, "_")
		rename := fmt.Sprintf("%05d_%s", next, what)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("db/migrations/%s: a migration is named by its number and what it does, "+
				"e.g. %05d_what_it_does.sql", name, next))
		case v <= newest:
			problems = append(problems, fmt.Sprintf("db/migrations/%s is numbered %d, not after the newest merged migration (%s): "+
				"migrations are only added, so rename it to %s", name, v, newestName, rename))
		case v < next:
			problems = append(problems, fmt.Sprintf("db/migrations/%s is numbered %d like %s: rename it to %s", name, v, previous, rename))
		case v > next:
			problems = append(problems, fmt.Sprintf("db/migrations/%s is numbered %d, but the next migration is %05d "+
				"(numbers follow the newest without gaps): rename it to %s", name, v, next, rename))
		default:
			problems = append(problems, fmt.Sprintf("db/migrations/%s is not in SHA256SUMS yet. Add this line to db/migrations/SHA256SUMS "+
				"(it pins the file once merged; `sha256sum %s` in db/migrations prints it):\n%s",
				name, name, sumLine(name, string(content))))
			next, previous = next+1, name
		}
	}
	return problems
}

// migrationVersion is the number a migration's name starts with, as goose
// reads it.
func migrationVersion(name string) (int64, bool) {
	prefix, _, ok := strings.Cut(name, "_")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(prefix, 10, 64)
	return v, err == nil && v > 0
}
