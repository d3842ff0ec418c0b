-- Preferences: a contact's opt-out of a channel records when the decision
-- behind the channel's current state was made (opt_out_at: channel -> time),
-- so that a passenger's STOP and START keywords delivered out of order are
-- decided by the provider's timestamps, and a keyword older than a later
-- decision changes nothing. Passengers change their preferences themselves:
-- by keyword on WhatsApp or SMS, and by an e-mail's unsubscribe link; the
-- history names that source.

-- +goose Up
ALTER TABLE contacts ADD COLUMN opt_out_at jsonb NOT NULL DEFAULT '{}';
ALTER TABLE contact_changes DROP CONSTRAINT contact_changes_source_check;
ALTER TABLE contact_changes ADD CONSTRAINT contact_changes_source_check
    CHECK (source IN ('event', 'api', 'console', 'inbound', 'whatsapp_keyword', 'sms_keyword', 'email_unsubscribe'));

-- +goose Down
ALTER TABLE contact_changes DROP CONSTRAINT contact_changes_source_check;
ALTER TABLE contact_changes ADD CONSTRAINT contact_changes_source_check
    CHECK (source IN ('event', 'api', 'console', 'inbound'));
ALTER TABLE contacts DROP COLUMN opt_out_at;
