package sns_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/sns"
)

// stsAndLogs answers GetCallerIdentity, and FilterLogEvents with answer.
func stsAndLogs(t *testing.T, status int, answer string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "" {
			fmt.Fprint(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
				`<Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func logAccount(config map[string]string) provider.Account {
	return provider.Account{ID: uuid.New(), TenantID: uuid.New(), Provider: "sns", Config: config,
		Secrets: map[string]string{"access_key_id": "AKIAHERALDTEST000001", "secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYHERALDTEST"}}
}

func TestDeliveryLogs(t *testing.T) {
	t.Parallel()

	t.Run("GroupsInTheLogRegion", func(t *testing.T) {
		t.Parallel()
		d := &sns.DeliveryLogs{Endpoint: stsAndLogs(t, 200, `{"events":[]}`).URL}
		g, err := d.LogGroups(context.Background(), logAccount(map[string]string{"region": "eu-west-1", sns.ConfigLogRegion: "eu-central-1"}))
		require.NoError(t, err)
		require.Equal(t, "eu-central-1", g.Region)
		require.Equal(t, []string{"sns/eu-central-1/123456789012/DirectPublishToPhoneNumber",
			"sns/eu-central-1/123456789012/DirectPublishToPhoneNumber/Failure"}, g.Groups)
		require.Equal(t, "123456789012:eu-central-1", g.Throttle)
	})

	t.Run("ErrorsTheReaderActsOn", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, body, token, code string
			class                   provider.Class
		}{
			{"Throttled", `{"__type":"ThrottlingException","message":"Rate exceeded"}`, "", "ThrottlingException", provider.RateLimited},
			{"NoGroup", `{"__type":"ResourceNotFoundException","message":"The specified log group does not exist."}`, "", provider.CodeLogGroupMissing, provider.Permanent},
			{"OldToken", `{"__type":"InvalidParameterException","message":"The specified nextToken is invalid."}`, "tok", provider.CodeLogTokenExpired, provider.Permanent},
			{"BadParameter", `{"__type":"InvalidParameterException","message":"startTime"}`, "", "InvalidParameterException", provider.Permanent},
			{"KeysRefused", `{"__type":"AccessDeniedException","message":"not authorized to perform logs:FilterLogEvents"}`, "", "AccessDeniedException", provider.Permanent},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				d := &sns.DeliveryLogs{Endpoint: stsAndLogs(t, 400, tc.body).URL}
				_, err := d.ReadLog(context.Background(), logAccount(map[string]string{"region": "eu-central-1"}),
					provider.LogQuery{Group: "g", Start: time.Now().Add(-time.Hour), End: time.Now(), Token: tc.token})
				pe := provider.Classify(err)
				require.Equal(t, tc.code, pe.Code)
				require.Equal(t, tc.class, pe.Class)
			})
		}
	})

	t.Run("ForeignLogEndpointRefused", func(t *testing.T) {
		t.Parallel()
		d := &sns.DeliveryLogs{}
		_, err := d.LogGroups(context.Background(), logAccount(map[string]string{"region": "eu-central-1",
			sns.ConfigLogEndpoint: "https://logs.attacker.example"}))
		require.Equal(t, "config_invalid_endpoint", provider.Classify(err).Code)
	})

	t.Run("RecordsReadAsTheWebhookReadsThem", func(t *testing.T) {
		t.Parallel()
		rec := `{"notification":{"messageId":"34d9b400-c6dd-5444-820d-fbeb0f1f54cf","timestamp":"2016-06-28 00:40:34.558"},` +
			`"delivery":{"destination":"+4915112345678","providerResponse":"Unknown error attempting to reach phone"},"status":"FAILURE"}`
		body := fmt.Sprintf(`{"events":[{"eventId":"1","timestamp":1467074434558,"message":%q},{"eventId":"2","timestamp":1467074434559,"message":"hello"}],"nextToken":"n2"}`, rec)
		d := &sns.DeliveryLogs{Endpoint: stsAndLogs(t, 200, body).URL}
		page, err := d.ReadLog(context.Background(), logAccount(map[string]string{"region": "eu-central-1"}),
			provider.LogQuery{Group: "g", Start: time.Unix(0, 0), End: time.Now()})
		require.NoError(t, err)
		require.Equal(t, "n2", page.NextToken)
		require.Len(t, page.Events, 2)
		r := page.Events[0].Receipt
		require.Equal(t, "34d9b400-c6dd-5444-820d-fbeb0f1f54cf", r.ExternalID)
		require.Equal(t, "34d9b400-c6dd-5444-820d-fbeb0f1f54cf:FAILURE", r.ReceiptID)
		require.Equal(t, provider.StatusFailed, r.Status)
		require.Equal(t, "Unknown error attempting to reach phone", r.Reason)
		require.Error(t, page.Events[1].Unreadable)
	})
}
