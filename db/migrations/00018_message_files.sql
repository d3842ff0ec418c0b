-- Files on channels that carry links or headers rather than attachments.
--
-- token_nonce is a random value per file that the signature of the file's
-- public short link (/f/<token>) covers: a link names the tenant, the file
-- and its expiry, and the server checks its MAC against this row's nonce,
-- so a link is only ever valid for the row it was made for (a restored or
-- re-created id gets another nonce) and dies with the row when retention
-- deletes the file. gen_random_uuid() gives 122 random bits without an
-- extension; existing rows get one each as the column is added.
--
-- header_format is the format of a Meta template's HEADER component
-- (TEXT, IMAGE, VIDEO, DOCUMENT, LOCATION; '' without a header), as
-- template sync reads it: a template with a DOCUMENT or IMAGE header
-- carries a message's file outside WhatsApp's customer service window.
--
-- messages.file_id limits a message to one of its event's files: support
-- re-sending a single file from the booking panel sends only that one.
-- NULL: every file of the event (and of the message's recipient).

-- +goose Up
ALTER TABLE attachments ADD COLUMN token_nonce bytea NOT NULL DEFAULT uuid_send(gen_random_uuid())
    CHECK (length(token_nonce) = 16);
ALTER TABLE meta_templates ADD COLUMN header_format text NOT NULL DEFAULT ''
    CHECK (header_format IN ('', 'TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT', 'LOCATION'));
ALTER TABLE messages ADD COLUMN file_id uuid;

-- +goose Down
ALTER TABLE messages DROP COLUMN file_id;
ALTER TABLE meta_templates DROP COLUMN header_format;
ALTER TABLE attachments DROP COLUMN token_nonce;
