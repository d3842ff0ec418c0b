-- DEPARTURE_CHANGED joined the registry (see 00036): tenants created before it
-- get its default texts, with their Meta templates, as new tenants do.
-- Generated from app.DefaultTemplates().

-- +goose Up
SELECT set_config('herald.scope', 'platform', true);
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'DEPARTURE_CHANGED', 'WHATSAPP', 'de-DE', '', 'Hallo {{passenger_name}},

die Abfahrt Ihrer Reise *{{tour_name}}* hat sich geändert.

Neue Abfahrt: *{{departure_at}}*
Zustiegsort: *{{boarding_point_name}}*

Ihre Erinnerungen kommen zur neuen Zeit. Gute Reise!', '{"name":"herald_departure_changed","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\ndie Abfahrt Ihrer Reise *{{2}}* hat sich geändert.\n\nNeue Abfahrt: *{{3}}*\nZustiegsort: *{{4}}*\n\nIhre Erinnerungen kommen zur neuen Zeit. Gute Reise!","parameters":["passenger_name","tour_name","departure_at","boarding_point_name"]}'::jsonb, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'DEPARTURE_CHANGED', 'WHATSAPP', 'en', '', 'Hello {{passenger_name}},

The departure of your trip *{{tour_name}}* has changed.

New departure: *{{departure_at}}*
Boarding point: *{{boarding_point_name}}*

Your reminders will follow the new time. Have a good trip!', '{"name":"herald_departure_changed","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nThe departure of your trip *{{2}}* has changed.\n\nNew departure: *{{3}}*\nBoarding point: *{{4}}*\n\nYour reminders will follow the new time. Have a good trip!","parameters":["passenger_name","tour_name","departure_at","boarding_point_name"]}'::jsonb, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'DEPARTURE_CHANGED', 'EMAIL', 'de-DE', 'Neue Abfahrtszeit: {{tour_name}}', '<p>Guten Tag {{passenger_name}},</p>
<p>die Abfahrt Ihrer Reise <strong>{{tour_name}}</strong> hat sich geändert.</p>
<p>Neue Abfahrt: <strong>{{departure_at}}</strong><br>
Zustiegsort: <strong>{{boarding_point_name}}</strong></p>
<p>Ihre Erinnerungen vor der Abfahrt erhalten Sie passend zur neuen Zeit.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'DEPARTURE_CHANGED', 'EMAIL', 'en', 'New departure time: {{tour_name}}', '<p>Dear {{passenger_name}},</p>
<p>The departure of your trip <strong>{{tour_name}}</strong> has changed.</p>
<p>New departure: <strong>{{departure_at}}</strong><br>
Boarding point: <strong>{{boarding_point_name}}</strong></p>
<p>Your reminders before departure will follow the new time.</p>
<p>Kind regards<br>
Your travel team</p>', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'DEPARTURE_CHANGED', 'SMS', 'de-DE', '', 'Neue Abfahrtszeit für {{tour_name}}: {{departure_at}}, Zustieg {{boarding_point_name}}.', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, whatsapp_template, version, is_active)
    SELECT gen_random_uuid(), id, 'DEPARTURE_CHANGED', 'SMS', 'en', '', 'New departure time for {{tour_name}}: {{departure_at}}, boarding at {{boarding_point_name}}.', NULL, 1, true FROM tenants
    ON CONFLICT (tenant_id, trigger_event, channel, locale) DO NOTHING;
-- +goose StatementEnd

-- +goose Down
SELECT set_config('herald.scope', 'platform', true);
DELETE FROM templates WHERE trigger_event = 'DEPARTURE_CHANGED';
