package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// The shape of the domain, as issue-sized rules a reader can trust: no
// function of package app is longer than maxFuncLines, and no transaction
// interface (a service's statements) has more than maxTxMethods methods,
// counting those it embeds. A service that needs more splits its
// statements by consumer, as the dispatcher's plan, send and settle do.
const (
	maxFuncLines = 80
	// 27, not 25, since routing holds audience SMS to the destination
	// rules: FallbackTx gained DestinationTx, and ReceiptTx (the receipt
	// rulebook with its fallbacks, plus the inbox claim) reached 27. Splitting
	// the rulebook's statements by consumer brings it back.
	maxTxMethods = 27
)

// txInterfaces are the transaction interfaces of app and app/console, by
// name: TestShape finds every one declared and fails on one missing here.
var txInterfaces = map[string]reflect.Type{
	"app.AckTx":                 reflect.TypeFor[app.AckTx](),
	"app.AlertCheckTx":          reflect.TypeFor[app.AlertCheckTx](),
	"app.AlertRaiseTx":          reflect.TypeFor[app.AlertRaiseTx](),
	"app.AlertTx":               reflect.TypeFor[app.AlertTx](),
	"app.APIKeyTx":              reflect.TypeFor[app.APIKeyTx](),
	"app.AccountTx":             reflect.TypeFor[app.AccountTx](),
	"app.AudienceTx":            reflect.TypeFor[app.AudienceTx](),
	"app.AuditTx":               reflect.TypeFor[app.AuditTx](),
	"app.BreakerTx":             reflect.TypeFor[app.BreakerTx](),
	"app.BrandingTx":            reflect.TypeFor[app.BrandingTx](),
	"app.CallbackEnqueueTx":     reflect.TypeFor[app.CallbackEnqueueTx](),
	"app.CallbackTx":            reflect.TypeFor[app.CallbackTx](),
	"app.ConfirmWindowTx":       reflect.TypeFor[app.ConfirmWindowTx](),
	"app.ConversationTx":        reflect.TypeFor[app.ConversationTx](),
	"app.InboxTx":               reflect.TypeFor[app.InboxTx](),
	"app.InboundConversationTx": reflect.TypeFor[app.InboundConversationTx](),
	"app.ContactResolveTx":      reflect.TypeFor[app.ContactResolveTx](),
	"app.ContactSearchTx":       reflect.TypeFor[app.ContactSearchTx](),
	"app.ContactsTx":            reflect.TypeFor[app.ContactsTx](),
	"app.ContactErasureTx":      reflect.TypeFor[app.ContactErasureTx](),
	"app.CredentialTx":          reflect.TypeFor[app.CredentialTx](),
	"app.FileServeTx":           reflect.TypeFor[app.FileServeTx](),
	"app.DeadlineTx":            reflect.TypeFor[app.DeadlineTx](),
	"app.DestinationTx":         reflect.TypeFor[app.DestinationTx](),
	"app.DispatchPlanTx":        reflect.TypeFor[app.DispatchPlanTx](),
	"app.EntityTx":              reflect.TypeFor[app.EntityTx](),
	"app.ExpiryTx":              reflect.TypeFor[app.ExpiryTx](),
	"app.FallbackTx":            reflect.TypeFor[app.FallbackTx](),
	"app.FileTx":                reflect.TypeFor[app.FileTx](),
	"app.HookTx":                reflect.TypeFor[app.HookTx](),
	"app.InboundTx":             reflect.TypeFor[app.InboundTx](),
	"app.InsertTx":              reflect.TypeFor[app.InsertTx](),
	"app.IntakeTx":              reflect.TypeFor[app.IntakeTx](),
	"app.LimitAdminTx":          reflect.TypeFor[app.LimitAdminTx](),
	"app.PriceTx":               reflect.TypeFor[app.PriceTx](),
	"app.RegistryTx":            reflect.TypeFor[app.RegistryTx](),
	"app.LimitTx":               reflect.TypeFor[app.LimitTx](),
	"app.SMSLimitTx":            reflect.TypeFor[app.SMSLimitTx](),
	"app.SMSLogTx":              reflect.TypeFor[app.SMSLogTx](),
	"app.OverdueTx":             reflect.TypeFor[app.OverdueTx](),
	"app.MaintenanceTx":         reflect.TypeFor[app.MaintenanceTx](),
	"app.MessagesTx":            reflect.TypeFor[app.MessagesTx](),
	"app.MetaTemplateTx":        reflect.TypeFor[app.MetaTemplateTx](),
	"app.NumberHealthTx":        reflect.TypeFor[app.NumberHealthTx](),
	"app.ReachTx":               reflect.TypeFor[app.ReachTx](),
	"app.PlanTx":                reflect.TypeFor[app.PlanTx](),
	"app.PreferenceTx":          reflect.TypeFor[app.PreferenceTx](),
	"app.ProvisionTx":           reflect.TypeFor[app.ProvisionTx](),
	"app.ReceiptApplyTx":        reflect.TypeFor[app.ReceiptApplyTx](),
	"app.ReceiptInboxTx":        reflect.TypeFor[app.ReceiptInboxTx](),
	"app.ReceiptClaimTx":        reflect.TypeFor[app.ReceiptClaimTx](),
	"app.ReceiptTx":             reflect.TypeFor[app.ReceiptTx](),
	"app.RejectionTx":           reflect.TypeFor[app.RejectionTx](),
	"app.RollupTx":              reflect.TypeFor[app.RollupTx](),
	"app.RouteTx":               reflect.TypeFor[app.RouteTx](),
	"app.SendTx":                reflect.TypeFor[app.SendTx](),
	"app.SettleTx":              reflect.TypeFor[app.SettleTx](),
	"app.TemplateTx":            reflect.TypeFor[app.TemplateTx](),
	"app.TenantTx":              reflect.TypeFor[app.TenantTx](),
	"app.Tx":                    reflect.TypeFor[app.Tx](),
	"app.UploadReadTx":          reflect.TypeFor[app.UploadReadTx](),
	"app.UploadTx":              reflect.TypeFor[app.UploadTx](),
	"app.UserTx":                reflect.TypeFor[app.UserTx](),
	"app.WhatsAppTx":            reflect.TypeFor[app.WhatsAppTx](),
	"console.APIKeyTx":          reflect.TypeFor[console.APIKeyTx](),
	"console.AccountTx":         reflect.TypeFor[console.AccountTx](),
	"console.AuditLogTx":        reflect.TypeFor[console.AuditLogTx](),
	"console.DashboardTx":       reflect.TypeFor[console.DashboardTx](),
	"console.MessageTx":         reflect.TypeFor[console.MessageTx](),
	"console.MetaTemplateTx":    reflect.TypeFor[console.MetaTemplateTx](),
	"console.QueueTx":           reflect.TypeFor[console.QueueTx](),
	"console.RejectionTx":       reflect.TypeFor[console.RejectionTx](),
	"console.ScheduleTx":        reflect.TypeFor[console.ScheduleTx](),
	"console.SessionTx":         reflect.TypeFor[console.SessionTx](),
	"console.TwoFactorTx":       reflect.TypeFor[console.TwoFactorTx](),
	"console.SecurityKeyTx":     reflect.TypeFor[console.SecurityKeyTx](),
	"console.TemplateTx":        reflect.TypeFor[console.TemplateTx](),
	"console.TenantTx":          reflect.TypeFor[console.TenantTx](),
	"console.TrendTx":           reflect.TypeFor[console.TrendTx](),
	"console.PromiseTx":         reflect.TypeFor[console.PromiseTx](),
	"console.TripTx":            reflect.TypeFor[console.TripTx](),
	"console.UserTx":            reflect.TypeFor[console.UserTx](),
}

func TestShape(t *testing.T) {
	t.Parallel()

	t.Run("FunctionsFitOnAScreen", func(t *testing.T) {
		t.Parallel()
		for _, f := range parseDir(t, ".") {
			for _, d := range f.file.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				lines := f.fset.Position(fd.End()).Line - f.fset.Position(fd.Pos()).Line + 1
				require.LessOrEqual(t, lines, maxFuncLines, "%s: %s is %d lines; split it", f.name, fd.Name.Name, lines)
			}
		}
	})

	t.Run("TransactionInterfacesStaySmall", func(t *testing.T) {
		t.Parallel()
		for pkg, dir := range map[string]string{"app": ".", "console": "console"} {
			for _, f := range parseDir(t, dir) {
				for _, d := range f.file.Decls {
					gd, ok := d.(*ast.GenDecl)
					if !ok {
						continue
					}
					for _, spec := range gd.Specs {
						ts, ok := spec.(*ast.TypeSpec)
						if !ok || !strings.HasSuffix(ts.Name.Name, "Tx") {
							continue
						}
						if _, isInterface := ts.Type.(*ast.InterfaceType); !isInterface {
							continue
						}
						name := pkg + "." + ts.Name.Name
						typ, known := txInterfaces[name]
						require.True(t, known, "%s declares %s: add it to txInterfaces in shape_test.go", f.name, name)
						require.LessOrEqual(t, typ.NumMethod(), maxTxMethods, "%s has %d methods with what it embeds; split it by consumer", name, typ.NumMethod())
					}
				}
			}
		}
	})
}

type parsedFile struct {
	name string
	fset *token.FileSet
	file *ast.File
}

// parseDir parses the non-test Go files of a directory of the module.
func parseDir(t *testing.T, dir string) []parsedFile {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var out []parsedFile
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		out = append(out, parsedFile{name: name, fset: fset, file: f})
	}
	require.NotEmpty(t, out, "no Go files in %s", dir)
	return out
}
