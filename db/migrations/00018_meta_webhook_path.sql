-- Each channel account gets an unguessable token for its Meta webhook path,
-- /webhooks/meta/a/{token}. The older path named the tenant's slug, which
-- anyone could guess, and the verification answer told tenants that exist
-- (with a Meta account) from others. Existing accounts get a token now
-- (two random UUIDs' hex, 244 random bits); new ones get one from Herald.

-- +goose Up
ALTER TABLE channel_accounts ADD COLUMN webhook_token text NOT NULL
    DEFAULT replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', '');
CREATE UNIQUE INDEX channel_accounts_webhook_token_key ON channel_accounts (webhook_token);

-- +goose Down
ALTER TABLE channel_accounts DROP COLUMN webhook_token;
