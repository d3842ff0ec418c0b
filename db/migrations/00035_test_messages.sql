-- Test messages: what a manager sends from the console to try a channel
-- account or a template before it goes live.
--
-- A test message goes through the real adapter like any other, but it is
-- never retried, never falls back to another channel and never makes a
-- status callback, and it may use a PENDING account. The flag says so on
-- the row, so that lists and totals can show tests as tests. The channel
-- tests stored before this migration are marked by their trigger event.

-- +goose Up
ALTER TABLE messages ADD COLUMN test boolean NOT NULL DEFAULT false;
UPDATE messages SET test = true WHERE trigger_event = 'CHANNEL_TEST';

-- +goose Down
ALTER TABLE messages DROP COLUMN test;
