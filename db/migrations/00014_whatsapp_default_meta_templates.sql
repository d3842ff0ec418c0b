-- Tenants provisioned before the default WhatsApp templates carried a Meta
-- template get it now, on every WhatsApp template whose text is still the
-- default's (an edited text keeps none: its Meta body would not match it),
-- so that outside the 24-hour window the dispatcher has a Meta template to
-- send once Meta approved it. Generated from app.DefaultTemplates(); the
-- template's version is not bumped (the text does not change).

-- +goose Up
SELECT set_config('herald.scope', 'platform', true);
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_booking_confirmed","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nvielen Dank für Ihre Buchung! Ihre Reise *{{2}}* am *{{3}}* ist bestätigt, Ihre Anzahlung von {{4}} ist bei uns eingegangen.\n\nBuchungsnummer: {{5}}\n\nWir freuen uns auf Sie!","parameters":["passenger_name","tour_name","departure_date","deposit_amount","booking_reference"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'BOOKING_CONFIRMED' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

vielen Dank für Ihre Buchung! Ihre Reise *{{tour_name}}* am *{{departure_date}}* ist bestätigt, Ihre Anzahlung von {{deposit_amount}} ist bei uns eingegangen.

Buchungsnummer: {{booking_reference}}

Wir freuen uns auf Sie!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_booking_confirmed","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nThank you for your booking! Your trip *{{2}}* on *{{3}}* is confirmed and we have received your deposit of {{4}}.\n\nBooking reference: {{5}}\n\nWe look forward to seeing you!","parameters":["passenger_name","tour_name","departure_date","deposit_amount","booking_reference"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'BOOKING_CONFIRMED' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

Thank you for your booking! Your trip *{{tour_name}}* on *{{departure_date}}* is confirmed and we have received your deposit of {{deposit_amount}}.

Booking reference: {{booking_reference}}

We look forward to seeing you!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_booking_fully_paid","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nvielen Dank für Ihre Zahlung! Ihre Reise *{{2}}* am {{3}} (Buchung {{4}}) ist mit {{5}} vollständig bezahlt.\n\nIhre Rechnung:\n{{6}}\n\nWir freuen uns auf Sie!","parameters":["passenger_name","tour_name","departure_date","booking_reference","total_amount","invoice_url"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'BOOKING_FULLY_PAID' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

vielen Dank für Ihre Zahlung! Ihre Reise *{{tour_name}}* am {{departure_date}} (Buchung {{booking_reference}}) ist mit {{total_amount}} vollständig bezahlt.

Ihre Rechnung:
{{invoice_url}}

Wir freuen uns auf Sie!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_booking_fully_paid","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nThank you for your payment! Your trip *{{2}}* on {{3}} (booking {{4}}) is now paid in full ({{5}}).\n\nYour invoice:\n{{6}}\n\nWe look forward to seeing you!","parameters":["passenger_name","tour_name","departure_date","booking_reference","total_amount","invoice_url"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'BOOKING_FULLY_PAID' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

Thank you for your payment! Your trip *{{tour_name}}* on {{departure_date}} (booking {{booking_reference}}) is now paid in full ({{total_amount}}).

Your invoice:
{{invoice_url}}

We look forward to seeing you!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_booking_cancelled","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nIhre Buchung {{2}} für *{{3}}* am {{4}} wurde storniert. Stornogebühr: {{5}}.\n\nHaben Sie bereits mehr gezahlt, erstatten wir Ihnen den Differenzbetrag; dazu erhalten Sie eine gesonderte Nachricht.\n\nBei Fragen sind wir gern für Sie da.","parameters":["passenger_name","booking_reference","tour_name","departure_date","cancellation_fee"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'BOOKING_CANCELLED' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

Ihre Buchung {{booking_reference}} für *{{tour_name}}* am {{departure_date}} wurde storniert. Stornogebühr: {{cancellation_fee}}.

Haben Sie bereits mehr gezahlt, erstatten wir Ihnen den Differenzbetrag; dazu erhalten Sie eine gesonderte Nachricht.

Bei Fragen sind wir gern für Sie da.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_booking_cancelled","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nYour booking {{2}} for *{{3}}* on {{4}} has been cancelled. Cancellation fee: {{5}}.\n\nIf you have already paid more than this, we will refund the difference and confirm it in a separate message.\n\nIf you have any questions, we are happy to help.","parameters":["passenger_name","booking_reference","tour_name","departure_date","cancellation_fee"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'BOOKING_CANCELLED' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

Your booking {{booking_reference}} for *{{tour_name}}* on {{departure_date}} has been cancelled. Cancellation fee: {{cancellation_fee}}.

If you have already paid more than this, we will refund the difference and confirm it in a separate message.

If you have any questions, we are happy to help.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_checkout_abandoned_whatsapp","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nSie haben vor Kurzem mit der Buchung unserer Reise *{{2}}* begonnen, sie aber noch nicht abgeschlossen.\n\nHier können Sie Ihre Buchung fortsetzen:\n{{3}}\n\nDie Plätze sind begrenzt. Bei Fragen antworten Sie einfach auf diese Nachricht.","parameters":["passenger_name","tour_name","checkout_url"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'CHECKOUT_ABANDONED_WHATSAPP' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

Sie haben vor Kurzem mit der Buchung unserer Reise *{{tour_name}}* begonnen, sie aber noch nicht abgeschlossen.

Hier können Sie Ihre Buchung fortsetzen:
{{checkout_url}}

Die Plätze sind begrenzt. Bei Fragen antworten Sie einfach auf diese Nachricht.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_checkout_abandoned_whatsapp","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nYou recently started booking *{{2}}* but have not completed it yet.\n\nYou can continue your booking here:\n{{3}}\n\nSeats are limited. If you have any questions, just reply to this message.","parameters":["passenger_name","tour_name","checkout_url"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'CHECKOUT_ABANDONED_WHATSAPP' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

You recently started booking *{{tour_name}}* but have not completed it yet.

You can continue your booking here:
{{checkout_url}}

Seats are limited. If you have any questions, just reply to this message.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_final_payment_due","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nIhre Reise *{{2}}* am {{3}} rückt näher! Die Restzahlung von *{{4}}* ist jetzt fällig.\n\nHier können Sie online bezahlen:\n{{5}}\n\nFalls Sie bereits bezahlt haben, betrachten Sie diese Nachricht bitte als gegenstandslos.","parameters":["passenger_name","tour_name","departure_date","remaining_amount","payment_link"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'FINAL_PAYMENT_DUE' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

Ihre Reise *{{tour_name}}* am {{departure_date}} rückt näher! Die Restzahlung von *{{remaining_amount}}* ist jetzt fällig.

Hier können Sie online bezahlen:
{{payment_link}}

Falls Sie bereits bezahlt haben, betrachten Sie diese Nachricht bitte als gegenstandslos.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_final_payment_due","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nYour trip *{{2}}* on {{3}} is getting closer! The final payment of *{{4}}* is now due.\n\nYou can pay online here:\n{{5}}\n\nIf you have already paid, please disregard this message.","parameters":["passenger_name","tour_name","departure_date","remaining_amount","payment_link"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'FINAL_PAYMENT_DUE' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

Your trip *{{tour_name}}* on {{departure_date}} is getting closer! The final payment of *{{remaining_amount}}* is now due.

You can pay online here:
{{payment_link}}

If you have already paid, please disregard this message.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_final_payment_overdue","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\ndie Restzahlung von *{{2}}* für Ihre Reise *{{3}}* am {{4}} ist seit {{5}} Tag(en) überfällig.\n\nBitte bezahlen Sie den Betrag möglichst bald hier:\n{{6}}\n\nFalls sich Ihre Zahlung mit dieser Nachricht überschnitten hat, betrachten Sie sie bitte als gegenstandslos.","parameters":["passenger_name","remaining_amount","tour_name","departure_date","days_overdue","payment_link"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'FINAL_PAYMENT_OVERDUE' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

die Restzahlung von *{{remaining_amount}}* für Ihre Reise *{{tour_name}}* am {{departure_date}} ist seit {{days_overdue}} Tag(en) überfällig.

Bitte bezahlen Sie den Betrag möglichst bald hier:
{{payment_link}}

Falls sich Ihre Zahlung mit dieser Nachricht überschnitten hat, betrachten Sie sie bitte als gegenstandslos.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_final_payment_overdue","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nThe final payment of *{{2}}* for your trip *{{3}}* on {{4}} is now {{5}} day(s) overdue.\n\nPlease pay as soon as possible here:\n{{6}}\n\nIf your payment has crossed with this message, please disregard it.","parameters":["passenger_name","remaining_amount","tour_name","departure_date","days_overdue","payment_link"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'FINAL_PAYMENT_OVERDUE' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

The final payment of *{{remaining_amount}}* for your trip *{{tour_name}}* on {{departure_date}} is now {{days_overdue}} day(s) overdue.

Please pay as soon as possible here:
{{payment_link}}

If your payment has crossed with this message, please disregard it.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_passenger_added","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\n{{2}} wurde zu Ihrer Buchung hinzugefügt:\n\n*{{3}}*\nAbreise: {{4}}\nZustiegsort: {{5}}\n\nWeitere Reiseinformationen erhalten Sie rechtzeitig vor der Abreise.","parameters":["recipient_name","passenger_name","tour_name","departure_date","boarding_point_name"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'PASSENGER_ADDED' AND locale = 'de-DE'
      AND body = 'Hallo {{recipient_name}},

{{passenger_name}} wurde zu Ihrer Buchung hinzugefügt:

*{{tour_name}}*
Abreise: {{departure_date}}
Zustiegsort: {{boarding_point_name}}

Weitere Reiseinformationen erhalten Sie rechtzeitig vor der Abreise.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_passenger_added","language":"en","category":"UTILITY","body":"Hello {{1}},\n\n{{2}} has been added to your booking:\n\n*{{3}}*\nDeparture: {{4}}\nBoarding point: {{5}}\n\nWe will send you further travel information in good time before departure.","parameters":["recipient_name","passenger_name","tour_name","departure_date","boarding_point_name"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'PASSENGER_ADDED' AND locale = 'en'
      AND body = 'Hello {{recipient_name}},

{{passenger_name}} has been added to your booking:

*{{tour_name}}*
Departure: {{departure_date}}
Boarding point: {{boarding_point_name}}

We will send you further travel information in good time before departure.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_service_leg_started","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nIhr Bus ist jetzt unterwegs zu Ihrem Zustiegsort *{{2}}*.\n\nHier können Sie die Fahrt verfolgen:\n{{3}}\n\nBitte seien Sie rechtzeitig am Zustiegsort. Gute Reise!","parameters":["passenger_name","boarding_point_name","tracking_url"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'SERVICE_LEG_STARTED' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

Ihr Bus ist jetzt unterwegs zu Ihrem Zustiegsort *{{boarding_point_name}}*.

Hier können Sie die Fahrt verfolgen:
{{tracking_url}}

Bitte seien Sie rechtzeitig am Zustiegsort. Gute Reise!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_service_leg_started","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nYour coach is now on its way to your boarding point *{{2}}*.\n\nYou can follow it here:\n{{3}}\n\nPlease be at the boarding point in good time. Have a good trip!","parameters":["passenger_name","boarding_point_name","tracking_url"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'SERVICE_LEG_STARTED' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

Your coach is now on its way to your boarding point *{{boarding_point_name}}*.

You can follow it here:
{{tracking_url}}

Please be at the boarding point in good time. Have a good trip!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_service_leg_cancelled","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nleider fällt ein Fahrtabschnitt Ihrer Reise *{{2}}* aus: die Fahrt ab *{{3}}*.\n\nBitte rufen Sie uns unter {{4}} an, damit wir gemeinsam eine Alternative finden.\n\nWir bitten um Entschuldigung für die Unannehmlichkeiten.","parameters":["passenger_name","tour_name","boarding_point_name","operator_phone"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'SERVICE_LEG_CANCELLED' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

leider fällt ein Fahrtabschnitt Ihrer Reise *{{tour_name}}* aus: die Fahrt ab *{{boarding_point_name}}*.

Bitte rufen Sie uns unter {{operator_phone}} an, damit wir gemeinsam eine Alternative finden.

Wir bitten um Entschuldigung für die Unannehmlichkeiten.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_service_leg_cancelled","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nWe are sorry to tell you that part of your trip *{{2}}* has been cancelled: the service from *{{3}}*.\n\nPlease call us on {{4}} so that we can find an alternative for you.\n\nWe apologise for the inconvenience.","parameters":["passenger_name","tour_name","boarding_point_name","operator_phone"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'SERVICE_LEG_CANCELLED' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

We are sorry to tell you that part of your trip *{{tour_name}}* has been cancelled: the service from *{{boarding_point_name}}*.

Please call us on {{operator_phone}} so that we can find an alternative for you.

We apologise for the inconvenience.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_broadcast","language":"de","category":"UTILITY","body":"*Wichtige Information zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\n{{3}}\n\nBei Fragen erreichen Sie uns unter {{4}}. Wir halten Sie auf dem Laufenden.","parameters":["tour_name","passenger_name","incident_message","operator_phone"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'INCIDENT_BROADCAST' AND locale = 'de-DE'
      AND body = '*Wichtige Information zu Ihrer Reise {{tour_name}}*

Hallo {{passenger_name}},

{{incident_message}}

Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir halten Sie auf dem Laufenden.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_broadcast","language":"en","category":"UTILITY","body":"*Important information about your trip {{1}}*\n\nHello {{2}},\n\n{{3}}\n\nIf you have any questions, please call us on {{4}}. We will keep you updated.","parameters":["tour_name","passenger_name","incident_message","operator_phone"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'INCIDENT_BROADCAST' AND locale = 'en'
      AND body = '*Important information about your trip {{tour_name}}*

Hello {{passenger_name}},

{{incident_message}}

If you have any questions, please call us on {{operator_phone}}. We will keep you updated.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_allclear","language":"de","category":"UTILITY","body":"*Entwarnung zu Ihrer Reise {{1}}*\n\nHallo {{2}},\n\ndie zuvor gemeldete Störung ist behoben.\n\n{{3}}\n\nVielen Dank für Ihre Geduld!","parameters":["tour_name","passenger_name","update_message"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'INCIDENT_ALLCLEAR' AND locale = 'de-DE'
      AND body = '*Entwarnung zu Ihrer Reise {{tour_name}}*

Hallo {{passenger_name}},

die zuvor gemeldete Störung ist behoben.

{{update_message}}

Vielen Dank für Ihre Geduld!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_incident_allclear","language":"en","category":"UTILITY","body":"*All clear for your trip {{1}}*\n\nHello {{2}},\n\nThe issue we told you about has been resolved.\n\n{{3}}\n\nThank you for your patience!","parameters":["tour_name","passenger_name","update_message"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'INCIDENT_ALLCLEAR' AND locale = 'en'
      AND body = '*All clear for your trip {{tour_name}}*

Hello {{passenger_name}},

The issue we told you about has been resolved.

{{update_message}}

Thank you for your patience!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_vehicle_swap_notification","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nfür Ihre Reise setzen wir ein anderes Fahrzeug ein als geplant.\n\nNeues Fahrzeug: *{{2}}* (statt {{3}})\nIhr Sitzplatz: *{{4}}*\n\nBitte achten Sie beim Einstieg auf das neue Fahrzeug. Ansonsten bleibt alles wie gebucht.","parameters":["passenger_name","new_vehicle","old_vehicle","seat_assignment"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'VEHICLE_SWAP_NOTIFICATION' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

für Ihre Reise setzen wir ein anderes Fahrzeug ein als geplant.

Neues Fahrzeug: *{{new_vehicle}}* (statt {{old_vehicle}})
Ihr Sitzplatz: *{{seat_assignment}}*

Bitte achten Sie beim Einstieg auf das neue Fahrzeug. Ansonsten bleibt alles wie gebucht.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_vehicle_swap_notification","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nYour trip will run with a different vehicle than planned.\n\nNew vehicle: *{{2}}* (instead of {{3}})\nYour seat: *{{4}}*\n\nPlease look out for the new vehicle when boarding. Everything else stays as booked.","parameters":["passenger_name","new_vehicle","old_vehicle","seat_assignment"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'VEHICLE_SWAP_NOTIFICATION' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

Your trip will run with a different vehicle than planned.

New vehicle: *{{new_vehicle}}* (instead of {{old_vehicle}})
Your seat: *{{seat_assignment}}*

Please look out for the new vehicle when boarding. Everything else stays as booked.';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_pre_trip_reminder","language":"de","category":"UTILITY","body":"Hallo {{1}},\n\nmorgen geht es los: *{{2}}*!\n\nDatum: {{3}}\nZustiegszeit: *{{4}} Uhr*\nZustiegsort: *{{5}}*\n\nBitte beachten Sie: {{6}}\n\nWir wünschen Ihnen eine gute Reise!","parameters":["passenger_name","tour_name","departure_date","boarding_time","boarding_point_name","passenger_instructions"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'PRE_TRIP_REMINDER' AND locale = 'de-DE'
      AND body = 'Hallo {{passenger_name}},

morgen geht es los: *{{tour_name}}*!

Datum: {{departure_date}}
Zustiegszeit: *{{boarding_time}} Uhr*
Zustiegsort: *{{boarding_point_name}}*

Bitte beachten Sie: {{passenger_instructions}}

Wir wünschen Ihnen eine gute Reise!';
-- +goose StatementEnd
-- +goose StatementBegin
UPDATE templates SET whatsapp_template = '{"name":"herald_pre_trip_reminder","language":"en","category":"UTILITY","body":"Hello {{1}},\n\nYour trip *{{2}}* starts tomorrow!\n\nDate: {{3}}\nBoarding time: *{{4}}*\nBoarding point: *{{5}}*\n\nPlease note: {{6}}\n\nHave a wonderful trip!","parameters":["passenger_name","tour_name","departure_date","boarding_time","boarding_point_name","passenger_instructions"]}'::jsonb
    WHERE channel = 'WHATSAPP' AND whatsapp_template IS NULL AND trigger_event = 'PRE_TRIP_REMINDER' AND locale = 'en'
      AND body = 'Hello {{passenger_name}},

Your trip *{{tour_name}}* starts tomorrow!

Date: {{departure_date}}
Boarding time: *{{boarding_time}}*
Boarding point: *{{boarding_point_name}}*

Please note: {{passenger_instructions}}

Have a wonderful trip!';
-- +goose StatementEnd

-- +goose Down
SELECT 1;
