-- +goose Up
-- A message's status moved by anyone but Herald leaves a trace. The guard
-- (herald_message_status_guard) already refuses every illegal move; a legal
-- one made by hand (SENT -> READ in psql) used to leave nothing. Herald's
-- own transactions say they are Herald's (db.beginScoped sets herald.writer
-- = herald, transaction-local); any other session's status change, and
-- every use of the one step back (herald.requeue_sent: SENT -> QUEUED), by
-- Herald or not, is written to the tenant's audit chain with who (the
-- session's and the current role, the application name, the client
-- address) and when. It is a trace, not a lock: the runtime role cannot
-- edit or delete audit entries, and the owner cannot edit them while the
-- chain's trigger stands.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald_message_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  forward constant text[] := ARRAY['QUEUED', 'SENT', 'DELIVERED', 'READ'];
  requeue constant boolean := OLD.status = 'SENT' AND NEW.status = 'QUEUED' AND coalesce(current_setting('herald.requeue_sent', true), '') = 'on';
  herald constant boolean := coalesce(current_setting('herald.writer', true), '') = 'herald';
BEGIN
  -- coalesce: array_position is NULL for a status off the forward path,
  -- and NOT NULL would let the move through.
  IF NOT coalesce(NEW.status = OLD.status
     OR (NEW.status = 'FAILED' AND OLD.status IN ('QUEUED', 'SENT', 'DELIVERED'))
     OR (NEW.status IN ('CANCELLED', 'EXPIRED') AND OLD.status = 'QUEUED')
     OR (array_position(forward, NEW.status) > array_position(forward, OLD.status))
     OR requeue, false)
  THEN
    RAISE EXCEPTION 'message % cannot move from % to %', OLD.id, OLD.status, NEW.status
      USING ERRCODE = 'check_violation',
            DETAIL = 'A message status only moves forward: QUEUED, SENT, DELIVERED, READ; FAILED from QUEUED, SENT or DELIVERED; CANCELLED and EXPIRED from QUEUED.',
            HINT = 'A message''s history is not edited; send a new message instead.';
  END IF;
  IF NEW.status <> OLD.status AND (requeue OR NOT herald) THEN
    INSERT INTO audit_log (tenant_id, actor_type, actor_label, action, target_type, target_id, metadata)
    VALUES (NEW.tenant_id, 'system', CASE WHEN herald THEN 'Herald' ELSE 'database role ' || session_user END,
      CASE WHEN herald THEN 'message.requeued' ELSE 'message.status_edited' END, 'message', NEW.id::text,
      jsonb_build_object('from', OLD.status, 'to', NEW.status, 'by_herald', herald, 'requeue_sent', requeue,
        'session_role', session_user::text, 'current_role', current_user::text,
        'application', current_setting('application_name', true), 'client', host(inet_client_addr()),
        'transaction_start', transaction_timestamp()));
  END IF;
  RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald_message_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  forward constant text[] := ARRAY['QUEUED', 'SENT', 'DELIVERED', 'READ'];
BEGIN
  IF NEW.status = OLD.status
     OR (NEW.status = 'FAILED' AND OLD.status IN ('QUEUED', 'SENT', 'DELIVERED'))
     OR (NEW.status IN ('CANCELLED', 'EXPIRED') AND OLD.status = 'QUEUED')
     OR (array_position(forward, NEW.status) > array_position(forward, OLD.status))
     OR (OLD.status = 'SENT' AND NEW.status = 'QUEUED' AND current_setting('herald.requeue_sent', true) = 'on')
  THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'message % cannot move from % to %', OLD.id, OLD.status, NEW.status
    USING ERRCODE = 'check_violation',
          DETAIL = 'A message status only moves forward: QUEUED, SENT, DELIVERED, READ; FAILED from QUEUED, SENT or DELIVERED; CANCELLED and EXPIRED from QUEUED.',
          HINT = 'A message''s history is not edited; send a new message instead.';
END
$$;
-- +goose StatementEnd
