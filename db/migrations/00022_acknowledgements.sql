-- Passengers acknowledge safety-relevant messages.
--
-- A message of an event that asks for acknowledgement (a departure change,
-- a cancellation, an incident, or an event the tenant marked by giving it
-- an ACKNOWLEDGED deadline) is acknowledged once: by the WhatsApp template's
-- quick-reply button or by the signed link of an SMS or e-mail. The first
-- acknowledgement wins and is kept with how it came (ack_via); it is not a
-- status: the status order (QUEUED, SENT, DELIVERED, READ) is unchanged,
-- and the timeline records it as a message event.
--
-- Delivery deadlines gain a stage: DELIVERED (the rule so far), READ or
-- ACKNOWLEDGED. A message that misses its stage's deadline continues its
-- fallback chain; one with no chain left puts its passenger on the trip's
-- call list (call_listed_at).

-- +goose Up
ALTER TABLE messages ADD COLUMN acknowledged_at timestamptz,
    ADD COLUMN ack_via text CHECK (ack_via IN ('whatsapp_button', 'link')),
    ADD COLUMN call_listed_at timestamptz,
    ADD CONSTRAINT messages_ack_via_check_pair CHECK ((acknowledged_at IS NULL) = (ack_via IS NULL));

ALTER TABLE delivery_deadlines ADD COLUMN stage text NOT NULL DEFAULT 'DELIVERED'
    CHECK (stage IN ('DELIVERED', 'READ', 'ACKNOWLEDGED'));
ALTER TABLE delivery_deadlines DROP CONSTRAINT delivery_deadlines_pkey;
ALTER TABLE delivery_deadlines ADD PRIMARY KEY (tenant_id, trigger_event, channel, stage);

-- +goose Down
DELETE FROM delivery_deadlines WHERE stage <> 'DELIVERED';
ALTER TABLE delivery_deadlines DROP CONSTRAINT delivery_deadlines_pkey;
ALTER TABLE delivery_deadlines ADD PRIMARY KEY (tenant_id, trigger_event, channel);
ALTER TABLE delivery_deadlines DROP COLUMN stage;
ALTER TABLE messages DROP CONSTRAINT messages_ack_via_check_pair, DROP COLUMN call_listed_at, DROP COLUMN ack_via, DROP COLUMN acknowledged_at;
