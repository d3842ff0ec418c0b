-- The database itself guards the message status rules, so that an edit by
-- hand (or a bug) cannot rewrite a message's history silently: a status
-- moves forward only, QUEUED < SENT < DELIVERED < READ; FAILED from QUEUED,
-- SENT or DELIVERED; CANCELLED from QUEUED; FAILED, READ and CANCELLED are
-- final. The one step back Herald takes itself, a SENT message the provider
-- later reported rate-limited going back to QUEUED to be sent again, is
-- allowed only in a transaction that says so (herald.requeue_sent = on,
-- transaction-local). Anything else is refused with check_violation, naming
-- the message and the move.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION herald_message_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  forward constant text[] := ARRAY['QUEUED', 'SENT', 'DELIVERED', 'READ'];
BEGIN
  IF NEW.status = OLD.status
     OR (NEW.status = 'FAILED' AND OLD.status IN ('QUEUED', 'SENT', 'DELIVERED'))
     OR (NEW.status = 'CANCELLED' AND OLD.status = 'QUEUED')
     OR (array_position(forward, NEW.status) > array_position(forward, OLD.status))
     OR (OLD.status = 'SENT' AND NEW.status = 'QUEUED' AND current_setting('herald.requeue_sent', true) = 'on')
  THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'message % cannot move from % to %', OLD.id, OLD.status, NEW.status
    USING ERRCODE = 'check_violation',
          DETAIL = 'A message status only moves forward: QUEUED, SENT, DELIVERED, READ; FAILED from QUEUED, SENT or DELIVERED; CANCELLED from QUEUED.',
          HINT = 'A message''s history is not edited; send a new message instead.';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER messages_status_forward BEFORE UPDATE OF status ON messages
  FOR EACH ROW EXECUTE FUNCTION herald_message_status_guard();

-- +goose Down
DROP TRIGGER messages_status_forward ON messages;
DROP FUNCTION herald_message_status_guard();
