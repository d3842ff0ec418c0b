-- A WhatsApp message that Meta reported failed with 131047 (the
-- customer-service window closed) after accepting its free-form text is
-- sent once more as its approved Meta template, as at send time: the flag
-- tells the next dispatch to plan the template whatever Herald's view of the
-- window, and that the resend happened (a second 131047 fails the message).
-- A new column with a constant default rewrites no rows.

-- +goose Up
ALTER TABLE messages ADD COLUMN whatsapp_template_only boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE messages DROP COLUMN whatsapp_template_only;
