-- TRIP_CANCELLED joined the registry (see 00050): tenants created before it
-- get its default texts, with their Meta templates, as new tenants do.
-- Generated from app.DefaultTemplates().

-- +goose Up
SELECT set_config('herald.scope', 'platform', true);
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'TRIP_CANCELLED', 'WHATSAPP', 'de-DE', '', '*Ihre Reise {{tour_name}} am {{departure_date}} findet nicht statt*

Hallo {{recipient_name}},

leider müssen wir die Reise absagen: {{cancellation_reason}}.

Bereits gezahlte Beträge erstatten wir vollständig; dazu erhalten Sie eine gesonderte Nachricht. Bei Fragen erreichen Sie uns unter {{operator_phone}}.', '{"name":"herald_trip_cancelled","language":"de","category":"UTILITY","body":"*Ihre Reise {{1}} am {{2}} findet nicht statt*\n\nHallo {{3}},\n\nleider müssen wir die Reise absagen: {{4}}.\n\nBereits gezahlte Beträge erstatten wir vollständig; dazu erhalten Sie eine gesonderte Nachricht. Bei Fragen erreichen Sie uns unter {{5}}.","parameters":["tour_name","departure_date","recipient_name","cancellation_reason","operator_phone"]}'::jsonb, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'TRIP_CANCELLED', 'WHATSAPP', 'en', '', '*Your trip {{tour_name}} on {{departure_date}} is cancelled*

Hello {{recipient_name}},

We are sorry to cancel this trip: {{cancellation_reason}}.

Everything you have paid will be refunded in full; you will receive a separate message about it. If you have any questions, please call us on {{operator_phone}}.', '{"name":"herald_trip_cancelled","language":"en","category":"UTILITY","body":"*Your trip {{1}} on {{2}} is cancelled*\n\nHello {{3}},\n\nWe are sorry to cancel this trip: {{4}}.\n\nEverything you have paid will be refunded in full; you will receive a separate message about it. If you have any questions, please call us on {{5}}.","parameters":["tour_name","departure_date","recipient_name","cancellation_reason","operator_phone"]}'::jsonb, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'TRIP_CANCELLED', 'SMS', 'de-DE', '', 'Ihre Reise {{tour_name}} am {{departure_date}} findet leider nicht statt: {{cancellation_reason}}. Gezahltes erstatten wir vollständig. Fragen: {{operator_phone}}', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'TRIP_CANCELLED', 'SMS', 'en', '', 'Your trip {{tour_name}} on {{departure_date}} is cancelled: {{cancellation_reason}}. Everything you paid will be refunded. Questions? Call {{operator_phone}}', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'TRIP_CANCELLED', 'EMAIL', 'de-DE', 'Absage: {{tour_name}} am {{departure_date}}', '<p>Guten Tag {{recipient_name}},</p>
<p>leider müssen wir Ihre Reise <strong>{{tour_name}}</strong> am <strong>{{departure_date}}</strong> absagen: {{cancellation_reason}}.</p>
<p>Bereits gezahlte Beträge erstatten wir Ihnen vollständig; darüber erhalten Sie eine gesonderte Nachricht. Erinnerungen, die wir Ihnen zu dieser Reise noch geschickt hätten, entfallen.</p>
<p>Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir bitten um Ihr Verständnis und hoffen, Sie bald auf einer anderen Reise begrüßen zu dürfen.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'TRIP_CANCELLED', 'EMAIL', 'en', 'Cancelled: {{tour_name}} on {{departure_date}}', '<p>Dear {{recipient_name}},</p>
<p>We are sorry to tell you that your trip <strong>{{tour_name}}</strong> on <strong>{{departure_date}}</strong> is cancelled: {{cancellation_reason}}.</p>
<p>Everything you have paid will be refunded in full; you will receive a separate message about it. Reminders we would still have sent you about this trip will not come.</p>
<p>If you have any questions, please call us on {{operator_phone}}. We apologise and hope to welcome you on another trip soon.</p>
<p>Kind regards<br>
Your travel team</p>', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('herald.scope', 'platform', true);
DELETE FROM templates WHERE trigger_event = 'TRIP_CANCELLED';
