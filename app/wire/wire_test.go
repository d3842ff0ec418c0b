package wire

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
)

// TestSNSVerifier checks that only a development server takes SNS posts
// signed with a certificate served on loopback: production keeps to
// Amazon's hosts.
func TestSNSVerifier(t *testing.T) {
	t.Parallel()
	sns := awsnotifytest.NewLoopback(t)
	const topic = "arn:aws:sns:eu-central-1:123456789012:ses-events"
	ctx := context.Background()

	t.Run("DevAcceptsLoopback", func(t *testing.T) {
		t.Parallel()
		v := snsVerifier(app.Config{Env: app.EnvDev})
		require.NoError(t, v.Verify(ctx, sns.Notification(topic, `{"eventType":"Delivery"}`)))
	})

	t.Run("ProdRefusesLoopback", func(t *testing.T) {
		t.Parallel()
		v := snsVerifier(app.Config{Env: app.EnvProd})
		require.ErrorContains(t, v.Verify(ctx, sns.Notification(topic, `{"eventType":"Delivery"}`)), "not https")
		e := sns.Notification(topic, "x")
		e.SigningCertURL = "https://127.0.0.1/SimpleNotificationService-test.pem"
		require.ErrorContains(t, v.Verify(ctx, e), "not an SNS host")
	})
}
