-- INCIDENT_BROADCAST and INCIDENT_ALLCLEAR go to everyone on a trip in one
-- event, so their default texts now greet each recipient by their own name
-- ({{recipient_name}}) instead of the event's passenger_name, which those
-- events no longer require. Tenants still on the earlier default text get
-- the new one, as a new version (the earlier one is kept in
-- template_versions); an edited text stays as the tenant wrote it. The
-- WhatsApp texts' Meta template keeps its body (the greeting is still
-- parameter 2), so an approval Meta gave stays valid; only the variable
-- behind the parameter changes. A WhatsApp text on the new default without
-- a Meta template gets it, as the earlier backfill did for the others.
-- Generated from app.DefaultTemplates().

-- +goose Up
SELECT set_config('herald.scope', 'platform', true);
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'WHATSAPP' AND locale = 'de-DE'
      AND body = '*Wichtige Information zu Ihrer Reise {{tour_name}}*

Hallo {{passenger_name}},

{{incident_message}}

Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir halten Sie auf dem Laufenden.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '*Wichtige Information zu Ihrer Reise {{tour_name}}*

Hallo {{recipient_name}},

{{incident_message}}

Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir halten Sie auf dem Laufenden.',
    whatsapp_template = CASE WHEN whatsapp_template IS NULL OR whatsapp_template = '{"name":"herald_incident_broadcast","language":"de","category":"UTILITY","body":"*Wichtige Information zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\n{{3}}\n\nBei Fragen erreichen Sie uns unter {{4}}. Wir halten Sie auf dem Laufenden.","parameters":["tour_name","passenger_name","incident_message","operator_phone"]}'::jsonb THEN '{"name":"herald_incident_broadcast","language":"de","category":"UTILITY","body":"*Wichtige Information zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\n{{3}}\n\nBei Fragen erreichen Sie uns unter {{4}}. Wir halten Sie auf dem Laufenden.","parameters":["tour_name","recipient_name","incident_message","operator_phone"]}'::jsonb ELSE whatsapp_template END,
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'WHATSAPP' AND locale = 'de-DE'
      AND body = '*Wichtige Information zu Ihrer Reise {{tour_name}}*

Hallo {{passenger_name}},

{{incident_message}}

Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir halten Sie auf dem Laufenden.';
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'WHATSAPP' AND locale = 'en'
      AND body = '*Important information about your trip {{tour_name}}*

Hello {{passenger_name}},

{{incident_message}}

If you have any questions, please call us on {{operator_phone}}. We will keep you updated.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '*Important information about your trip {{tour_name}}*

Hello {{recipient_name}},

{{incident_message}}

If you have any questions, please call us on {{operator_phone}}. We will keep you updated.',
    whatsapp_template = CASE WHEN whatsapp_template IS NULL OR whatsapp_template = '{"name":"herald_incident_broadcast","language":"en","category":"UTILITY","body":"*Important information about your trip {{1}}*\n\nHello {{2}},\n\n{{3}}\n\nIf you have any questions, please call us on {{4}}. We will keep you updated.","parameters":["tour_name","passenger_name","incident_message","operator_phone"]}'::jsonb THEN '{"name":"herald_incident_broadcast","language":"en","category":"UTILITY","body":"*Important information about your trip {{1}}*\n\nHello {{2}},\n\n{{3}}\n\nIf you have any questions, please call us on {{4}}. We will keep you updated.","parameters":["tour_name","recipient_name","incident_message","operator_phone"]}'::jsonb ELSE whatsapp_template END,
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'WHATSAPP' AND locale = 'en'
      AND body = '*Important information about your trip {{tour_name}}*

Hello {{passenger_name}},

{{incident_message}}

If you have any questions, please call us on {{operator_phone}}. We will keep you updated.';
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'EMAIL' AND locale = 'de-DE'
      AND body = '<p>Guten Tag {{passenger_name}},</p>
<p>wir haben eine wichtige Information zu Ihrer Reise <strong>{{tour_name}}</strong>:</p>
<p><strong>{{incident_message}}</strong></p>
<p>Wir halten Sie auf dem Laufenden und melden uns, sobald es Neuigkeiten gibt. Bei Fragen oder wenn Sie Hilfe benötigen, erreichen Sie uns unter <strong>{{operator_phone}}</strong>.</p>
<p>Vielen Dank für Ihr Verständnis.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '<p>Guten Tag {{recipient_name}},</p>
<p>wir haben eine wichtige Information zu Ihrer Reise <strong>{{tour_name}}</strong>:</p>
<p><strong>{{incident_message}}</strong></p>
<p>Wir halten Sie auf dem Laufenden und melden uns, sobald es Neuigkeiten gibt. Bei Fragen oder wenn Sie Hilfe benötigen, erreichen Sie uns unter <strong>{{operator_phone}}</strong>.</p>
<p>Vielen Dank für Ihr Verständnis.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>',
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'EMAIL' AND locale = 'de-DE'
      AND body = '<p>Guten Tag {{passenger_name}},</p>
<p>wir haben eine wichtige Information zu Ihrer Reise <strong>{{tour_name}}</strong>:</p>
<p><strong>{{incident_message}}</strong></p>
<p>Wir halten Sie auf dem Laufenden und melden uns, sobald es Neuigkeiten gibt. Bei Fragen oder wenn Sie Hilfe benötigen, erreichen Sie uns unter <strong>{{operator_phone}}</strong>.</p>
<p>Vielen Dank für Ihr Verständnis.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>';
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'EMAIL' AND locale = 'en'
      AND body = '<p>Dear {{passenger_name}},</p>
<p>We have important information about your trip <strong>{{tour_name}}</strong>:</p>
<p><strong>{{incident_message}}</strong></p>
<p>We will keep you updated and get back to you as soon as there is news. If you have any questions or need help, you can reach us on <strong>{{operator_phone}}</strong>.</p>
<p>Thank you for your understanding.</p>
<p>Kind regards<br>
Your travel team</p>';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '<p>Dear {{recipient_name}},</p>
<p>We have important information about your trip <strong>{{tour_name}}</strong>:</p>
<p><strong>{{incident_message}}</strong></p>
<p>We will keep you updated and get back to you as soon as there is news. If you have any questions or need help, you can reach us on <strong>{{operator_phone}}</strong>.</p>
<p>Thank you for your understanding.</p>
<p>Kind regards<br>
Your travel team</p>',
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'EMAIL' AND locale = 'en'
      AND body = '<p>Dear {{passenger_name}},</p>
<p>We have important information about your trip <strong>{{tour_name}}</strong>:</p>
<p><strong>{{incident_message}}</strong></p>
<p>We will keep you updated and get back to you as soon as there is news. If you have any questions or need help, you can reach us on <strong>{{operator_phone}}</strong>.</p>
<p>Thank you for your understanding.</p>
<p>Kind regards<br>
Your travel team</p>';
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'WHATSAPP' AND locale = 'de-DE'
      AND body = '*Entwarnung zu Ihrer Reise {{tour_name}}*

Hallo {{passenger_name}},

die zuvor gemeldete Störung ist behoben.

{{update_message}}

Vielen Dank für Ihre Geduld!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '*Entwarnung zu Ihrer Reise {{tour_name}}*

Hallo {{recipient_name}},

die zuvor gemeldete Störung ist behoben.

{{update_message}}

Vielen Dank für Ihre Geduld!',
    whatsapp_template = CASE WHEN whatsapp_template IS NULL OR whatsapp_template = '{"name":"herald_incident_allclear","language":"de","category":"UTILITY","body":"*Entwarnung zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\ndie zuvor gemeldete Störung ist behoben.\n\n{{3}}\n\nVielen Dank für Ihre Geduld!","parameters":["tour_name","passenger_name","update_message"]}'::jsonb THEN '{"name":"herald_incident_allclear","language":"de","category":"UTILITY","body":"*Entwarnung zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\ndie zuvor gemeldete Störung ist behoben.\n\n{{3}}\n\nVielen Dank für Ihre Geduld!","parameters":["tour_name","recipient_name","update_message"]}'::jsonb ELSE whatsapp_template END,
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'WHATSAPP' AND locale = 'de-DE'
      AND body = '*Entwarnung zu Ihrer Reise {{tour_name}}*

Hallo {{passenger_name}},

die zuvor gemeldete Störung ist behoben.

{{update_message}}

Vielen Dank für Ihre Geduld!';
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'WHATSAPP' AND locale = 'en'
      AND body = '*All clear for your trip {{tour_name}}*

Hello {{passenger_name}},

The issue we told you about has been resolved.

{{update_message}}

Thank you for your patience!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '*All clear for your trip {{tour_name}}*

Hello {{recipient_name}},

The issue we told you about has been resolved.

{{update_message}}

Thank you for your patience!',
    whatsapp_template = CASE WHEN whatsapp_template IS NULL OR whatsapp_template = '{"name":"herald_incident_allclear","language":"en","category":"UTILITY","body":"*All clear for your trip {{1}}*\n\nHello {{2}},\n\nThe issue we told you about has been resolved.\n\n{{3}}\n\nThank you for your patience!","parameters":["tour_name","passenger_name","update_message"]}'::jsonb THEN '{"name":"herald_incident_allclear","language":"en","category":"UTILITY","body":"*All clear for your trip {{1}}*\n\nHello {{2}},\n\nThe issue we told you about has been resolved.\n\n{{3}}\n\nThank you for your patience!","parameters":["tour_name","recipient_name","update_message"]}'::jsonb ELSE whatsapp_template END,
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'WHATSAPP' AND locale = 'en'
      AND body = '*All clear for your trip {{tour_name}}*

Hello {{passenger_name}},

The issue we told you about has been resolved.

{{update_message}}

Thank you for your patience!';
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'EMAIL' AND locale = 'de-DE'
      AND body = '<p>Guten Tag {{passenger_name}},</p>
<p>wir haben gute Nachrichten zu Ihrer Reise <strong>{{tour_name}}</strong>: Die zuvor gemeldete Störung ist behoben.</p>
<p><strong>{{update_message}}</strong></p>
<p>Vielen Dank für Ihre Geduld und Ihr Verständnis. Wir wünschen Ihnen eine gute Reise.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '<p>Guten Tag {{recipient_name}},</p>
<p>wir haben gute Nachrichten zu Ihrer Reise <strong>{{tour_name}}</strong>: Die zuvor gemeldete Störung ist behoben.</p>
<p><strong>{{update_message}}</strong></p>
<p>Vielen Dank für Ihre Geduld und Ihr Verständnis. Wir wünschen Ihnen eine gute Reise.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>',
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'EMAIL' AND locale = 'de-DE'
      AND body = '<p>Guten Tag {{passenger_name}},</p>
<p>wir haben gute Nachrichten zu Ihrer Reise <strong>{{tour_name}}</strong>: Die zuvor gemeldete Störung ist behoben.</p>
<p><strong>{{update_message}}</strong></p>
<p>Vielen Dank für Ihre Geduld und Ihr Verständnis. Wir wünschen Ihnen eine gute Reise.</p>
<p>Mit freundlichen Grüßen<br>
Ihr Reiseteam</p>';
-- +goose StatementEnd
-- +goose StatementBegin
INSERT INTO template_versions (template_id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, created_at)
    SELECT id, version, tenant_id, subject, body, whatsapp_template, is_active, updated_by, updated_at FROM templates
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'EMAIL' AND locale = 'en'
      AND body = '<p>Dear {{passenger_name}},</p>
<p>Good news about your trip <strong>{{tour_name}}</strong>: the issue we told you about has been resolved.</p>
<p><strong>{{update_message}}</strong></p>
<p>Thank you for your patience and understanding. We wish you a pleasant journey.</p>
<p>Kind regards<br>
Your travel team</p>';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET body = '<p>Dear {{recipient_name}},</p>
<p>Good news about your trip <strong>{{tour_name}}</strong>: the issue we told you about has been resolved.</p>
<p><strong>{{update_message}}</strong></p>
<p>Thank you for your patience and understanding. We wish you a pleasant journey.</p>
<p>Kind regards<br>
Your travel team</p>',
    version = version + 1, updated_by = NULL, updated_at = now()
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'EMAIL' AND locale = 'en'
      AND body = '<p>Dear {{passenger_name}},</p>
<p>Good news about your trip <strong>{{tour_name}}</strong>: the issue we told you about has been resolved.</p>
<p><strong>{{update_message}}</strong></p>
<p>Thank you for your patience and understanding. We wish you a pleasant journey.</p>
<p>Kind regards<br>
Your travel team</p>';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_allclear","language":"en","category":"UTILITY","body":"*All clear for your trip {{1}}*\n\nHello {{2}},\n\nThe issue we told you about has been resolved.\n\n{{3}}\n\nThank you for your patience!","parameters":["tour_name","recipient_name","update_message"]}'::jsonb
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'WHATSAPP' AND locale = 'en' AND whatsapp_template IS NULL
      AND body = '*All clear for your trip {{tour_name}}*

Hello {{recipient_name}},

The issue we told you about has been resolved.

{{update_message}}

Thank you for your patience!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_allclear","language":"de","category":"UTILITY","body":"*Entwarnung zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\ndie zuvor gemeldete Störung ist behoben.\n\n{{3}}\n\nVielen Dank für Ihre Geduld!","parameters":["tour_name","recipient_name","update_message"]}'::jsonb
    WHERE trigger_event = 'INCIDENT_ALLCLEAR' AND channel = 'WHATSAPP' AND locale = 'de-DE' AND whatsapp_template IS NULL
      AND body = '*Entwarnung zu Ihrer Reise {{tour_name}}*

Hallo {{recipient_name}},

die zuvor gemeldete Störung ist behoben.

{{update_message}}

Vielen Dank für Ihre Geduld!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_broadcast","language":"en","category":"UTILITY","body":"*Important information about your trip {{1}}*\n\nHello {{2}},\n\n{{3}}\n\nIf you have any questions, please call us on {{4}}. We will keep you updated.","parameters":["tour_name","recipient_name","incident_message","operator_phone"]}'::jsonb
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'WHATSAPP' AND locale = 'en' AND whatsapp_template IS NULL
      AND body = '*Important information about your trip {{tour_name}}*

Hello {{recipient_name}},

{{incident_message}}

If you have any questions, please call us on {{operator_phone}}. We will keep you updated.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_broadcast","language":"de","category":"UTILITY","body":"*Wichtige Information zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\n{{3}}\n\nBei Fragen erreichen Sie uns unter {{4}}. Wir halten Sie auf dem Laufenden.","parameters":["tour_name","recipient_name","incident_message","operator_phone"]}'::jsonb
    WHERE trigger_event = 'INCIDENT_BROADCAST' AND channel = 'WHATSAPP' AND locale = 'de-DE' AND whatsapp_template IS NULL
      AND body = '*Wichtige Information zu Ihrer Reise {{tour_name}}*

Hallo {{recipient_name}},

{{incident_message}}

Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir halten Sie auf dem Laufenden.';
-- +goose StatementEnd

-- +goose Down
-- The new greeting stays: the earlier text is in template_versions.
SELECT 1;
