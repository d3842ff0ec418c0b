package app_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The layers of DESIGN.md, as import rules: the domain (app and the console's
// services) knows no transport, queue, SQL or template library, and views get
// typed props, never a database. A rule names a package and the import path
// prefixes none of its dependencies, direct or not, may start with.
var layering = []struct {
	pkg       string
	forbidden []string
}{
	{"github.com/heraldhq/herald/app", []string{
		"github.com/gofiber/", "github.com/valyala/fasthttp", "github.com/riverqueue/", "github.com/jmoiron/sqlx",
		"github.com/jackc/pgx", "github.com/lib/pq", "github.com/a-h/templ",
		"github.com/heraldhq/herald/db", "github.com/heraldhq/herald/jobs", "github.com/heraldhq/herald/web",
		"github.com/heraldhq/herald/views", "github.com/heraldhq/herald/app/console",
	}},
	{"github.com/heraldhq/herald/app/console", []string{
		"github.com/gofiber/", "github.com/valyala/fasthttp", "github.com/riverqueue/", "github.com/jmoiron/sqlx",
		"github.com/jackc/pgx", "github.com/lib/pq", "github.com/a-h/templ",
		"github.com/heraldhq/herald/db", "github.com/heraldhq/herald/jobs", "github.com/heraldhq/herald/web",
		"github.com/heraldhq/herald/views",
	}},
	{"github.com/heraldhq/herald/views", []string{
		"github.com/heraldhq/herald/db", "github.com/heraldhq/herald/jobs", "github.com/heraldhq/herald/web",
		"github.com/jmoiron/sqlx", "github.com/jackc/pgx", "github.com/riverqueue/", "github.com/gofiber/",
	}},
	{"github.com/heraldhq/herald/web", []string{
		"github.com/heraldhq/herald/db", "github.com/heraldhq/herald/jobs",
		"github.com/jmoiron/sqlx", "github.com/jackc/pgx", "github.com/riverqueue/",
	}},
}

func TestLayering(t *testing.T) {
	t.Parallel()
	for _, rule := range layering {
		t.Run(rule.pkg[strings.LastIndex(rule.pkg, "/")+1:], func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("go", "list", "-deps", rule.pkg).CombinedOutput()
			require.NoError(t, err, "go list -deps %s: %s", rule.pkg, out)
			deps := strings.Fields(string(out))
			require.Contains(t, deps, rule.pkg, "go list names the package itself among its dependencies")
			for _, dep := range deps {
				for _, bad := range rule.forbidden {
					require.False(t, strings.HasPrefix(dep, bad) && dep != rule.pkg,
						"%s depends on %s: %s must not import anything under %s", rule.pkg, dep, rule.pkg, bad)
				}
			}
		})
	}
}
