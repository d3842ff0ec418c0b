-- SMS parts and encodings.
--
-- An SMS message records what it costs: sms_encoding GSM7 or UCS2 and
-- sms_parts, the parts its text is split into (app.CountSMS), set when
-- the message is stored from the very text that is sent. Both are NULL
-- for other channels and for SMS stored before this migration; per-part
-- pricing reads them. The checks keep the pair together and on SMS only.
--
-- tenant_limits.max_sms_parts is an operator's limit of a tenant's SMS
-- length in parts; NULL means app.DefaultMaxSMSParts. Templates longer
-- than it are not saved and messages that render longer are not sent.

-- +goose Up
ALTER TABLE messages
    ADD COLUMN sms_parts    integer CHECK (sms_parts >= 0),
    ADD COLUMN sms_encoding text CHECK (sms_encoding IN ('GSM7', 'UCS2')),
    ADD CONSTRAINT messages_sms_count_check CHECK ((sms_parts IS NULL) = (sms_encoding IS NULL)
        AND (sms_parts IS NULL OR channel = 'SMS'));

ALTER TABLE tenant_limits
    ADD COLUMN max_sms_parts integer CHECK (max_sms_parts BETWEEN 1 AND 10);

-- +goose Down
ALTER TABLE tenant_limits DROP COLUMN max_sms_parts;
ALTER TABLE messages DROP CONSTRAINT messages_sms_count_check, DROP COLUMN sms_encoding, DROP COLUMN sms_parts;
