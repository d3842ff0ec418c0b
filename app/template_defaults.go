package app

import "sync"

// DefaultTemplate is a message text Herald provisions for every new tenant,
// one per registry event, channel and locale. Tenants edit them freely.
type DefaultTemplate struct {
	Event   string
	Channel Channel
	Locale  string
	// Subject is used by e-mail only.
	Subject string
	// Body uses {{variable}} placeholders. E-mail bodies are HTML; WhatsApp
	// and SMS bodies are plain text.
	Body string
	// Format is an e-mail body's format; empty is HTML.
	Format BodyFormat
	// WhatsApp is, for WhatsApp texts, the Meta template derived from Body
	// (DeriveMetaTemplate): what the tenant submits for approval, and what
	// is sent outside the 24-hour customer-service window.
	WhatsApp *WhatsAppTemplateSpec
}

// DefaultLocales are the locales every tenant gets templates for.
var DefaultLocales = []string{"de-DE", "en"}

// DefaultTemplates returns the provisioned texts, each WhatsApp text with
// its Meta template.
func DefaultTemplates() []DefaultTemplate { return defaultsWithMeta() }

// defaultsWithMeta derives the Meta templates of the WhatsApp defaults once.
// A text that does not make a valid Meta template keeps none; the defaults'
// test fails on it.
var defaultsWithMeta = sync.OnceValue(func() []DefaultTemplate {
	out := make([]DefaultTemplate, len(defaultTemplates))
	copy(out, defaultTemplates)
	for i := range out {
		d := &out[i]
		if d.Channel != WhatsApp {
			continue
		}
		if event, ok := BuiltInEvent(d.Event); ok {
			d.WhatsApp, _ = DeriveMetaTemplate(event, d.Locale, d.Body)
		}
	}
	return out
})

// defaultTemplates holds the provisioned texts, grouped by event in registry
// order; within an event, the channels follow the event's TemplateChannels
// (its Channels, then SMS as the fallback wherever WhatsApp is one) and each
// channel comes in de-DE, then en.
//
// Conventions the texts follow (template_defaults_test.go checks them):
//   - e-mail bodies are HTML fragments (no document wrapper, styles or
//     images) of <p>, <strong>, <br> and <a href> around a URL variable
//     (…_url, …_link); values are escaped when rendered;
//   - WhatsApp bodies are plain text with *bold* and never start or end with
//     a placeholder, which Meta rejects in message templates;
//   - SMS bodies are one plain paragraph without greeting or formatting,
//     carrying the essential fact and the event's link, if it has one; they
//     stay within the GSM-7 alphabet, so a part holds 160 characters rather
//     than 70.
//
// Dates, amounts and counts arrive formatted by the caller, so counts sit
// behind a label or "Tag(en)" instead of a plural form that might not fit.
var defaultTemplates = []DefaultTemplate{
	// BOOKING_CONFIRMED
	{
		Event: "BOOKING_CONFIRMED", Channel: Email, Locale: "de-DE",
		Subject: "Buchungsbestätigung: {{tour_name}} ({{booking_reference}})",
		Body: `Guten Tag {{passenger_name}},

vielen Dank für Ihre Buchung! Wir haben Ihre Anzahlung erhalten und bestätigen Ihnen hiermit verbindlich Ihre Reise.

Reise: **{{tour_name}}**\
Abreise: **{{departure_date}}**\
Buchungsnummer: **{{booking_reference}}**\
Erhaltene Anzahlung: **{{deposit_amount}}**

Bitte geben Sie bei Rückfragen immer Ihre Buchungsnummer an. Über die Restzahlung sowie Abfahrtsort und -zeit informieren wir Sie rechtzeitig vor Reisebeginn.

Wir freuen uns, Sie an Bord begrüßen zu dürfen.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_CONFIRMED", Channel: Email, Locale: "en",
		Subject: "Booking confirmed: {{tour_name}} ({{booking_reference}})",
		Body: `Dear {{passenger_name}},

Thank you for your booking! We have received your deposit and are pleased to confirm your trip.

Tour: **{{tour_name}}**\
Departure: **{{departure_date}}**\
Booking reference: **{{booking_reference}}**\
Deposit received: **{{deposit_amount}}**

Please quote your booking reference whenever you contact us. We will let you know about the remaining balance and your departure point and time in good time before the trip.

We look forward to welcoming you on board.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_CONFIRMED", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"vielen Dank für Ihre Buchung! Ihre Reise *{{tour_name}}* am *{{departure_date}}* ist bestätigt, Ihre Anzahlung von {{deposit_amount}} ist bei uns eingegangen.\n\n" +
			"Buchungsnummer: {{booking_reference}}\n\n" +
			"Wir freuen uns auf Sie!",
	},
	{
		Event: "BOOKING_CONFIRMED", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"Thank you for your booking! Your trip *{{tour_name}}* on *{{departure_date}}* is confirmed and we have received your deposit of {{deposit_amount}}.\n\n" +
			"Booking reference: {{booking_reference}}\n\n" +
			"We look forward to seeing you!",
	},
	{
		Event: "BOOKING_CONFIRMED", Channel: SMS, Locale: "de-DE",
		Body: "Ihre Buchung {{booking_reference}} ist bestätigt: {{tour_name}} am {{departure_date}}. Ihre Anzahlung von {{deposit_amount}} haben wir erhalten. Wir freuen uns auf Sie! {{files}}",
	},
	{
		Event: "BOOKING_CONFIRMED", Channel: SMS, Locale: "en",
		Body: "Your booking {{booking_reference}} is confirmed: {{tour_name}} on {{departure_date}}. We have received your deposit of {{deposit_amount}}. We look forward to seeing you! {{files}}",
	},

	// BOOKING_FULLY_PAID
	{
		Event: "BOOKING_FULLY_PAID", Channel: Email, Locale: "de-DE",
		Subject: "Zahlung vollständig erhalten: {{tour_name}} ({{booking_reference}})",
		Body: `Guten Tag {{passenger_name}},

vielen Dank! Ihre Reise ist nun vollständig bezahlt.

Reise: **{{tour_name}}**\
Abreise: **{{departure_date}}**\
Buchungsnummer: **{{booking_reference}}**\
Gezahlter Gesamtbetrag: **{{total_amount}}**

Ihre Rechnung finden Sie hier: [Rechnung ansehen]({{invoice_url}})

Alle Informationen zu Abfahrtsort und -zeit senden wir Ihnen rechtzeitig vor der Abreise. Wir freuen uns auf Sie!

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_FULLY_PAID", Channel: Email, Locale: "en",
		Subject: "Payment received in full: {{tour_name}} ({{booking_reference}})",
		Body: `Dear {{passenger_name}},

Thank you! Your trip is now paid in full.

Tour: **{{tour_name}}**\
Departure: **{{departure_date}}**\
Booking reference: **{{booking_reference}}**\
Total paid: **{{total_amount}}**

You can find your invoice here: [View invoice]({{invoice_url}})

We will send you all the details of your departure point and time in good time before the trip. We look forward to seeing you!

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_FULLY_PAID", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"vielen Dank für Ihre Zahlung! Ihre Reise *{{tour_name}}* am {{departure_date}} (Buchung {{booking_reference}}) ist mit {{total_amount}} vollständig bezahlt.\n\n" +
			"Ihre Rechnung:\n{{invoice_url}}\n\n" +
			"Wir freuen uns auf Sie!",
	},
	{
		Event: "BOOKING_FULLY_PAID", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"Thank you for your payment! Your trip *{{tour_name}}* on {{departure_date}} (booking {{booking_reference}}) is now paid in full ({{total_amount}}).\n\n" +
			"Your invoice:\n{{invoice_url}}\n\n" +
			"We look forward to seeing you!",
	},
	{
		Event: "BOOKING_FULLY_PAID", Channel: SMS, Locale: "de-DE",
		Body: "Vielen Dank! Ihre Reise {{tour_name}} am {{departure_date}} (Buchung {{booking_reference}}) ist mit {{total_amount}} vollständig bezahlt. Ihre Rechnung: {{invoice_url}}",
	},
	{
		Event: "BOOKING_FULLY_PAID", Channel: SMS, Locale: "en",
		Body: "Thank you! Your trip {{tour_name}} on {{departure_date}} (booking {{booking_reference}}) is now paid in full ({{total_amount}}). Your invoice: {{invoice_url}}",
	},

	// BOOKING_CANCELLED
	{
		Event: "BOOKING_CANCELLED", Channel: Email, Locale: "de-DE",
		Subject: "Stornierungsbestätigung: {{tour_name}} ({{booking_reference}})",
		Body: `Guten Tag {{passenger_name}},

hiermit bestätigen wir die Stornierung Ihrer Buchung.

Reise: **{{tour_name}}**\
Abreise: **{{departure_date}}**\
Buchungsnummer: **{{booking_reference}}**\
Stornogebühr: **{{cancellation_fee}}**

Die Stornogebühr richtet sich nach unseren Reisebedingungen. Haben Sie bereits mehr gezahlt, erstatten wir Ihnen den Differenzbetrag; darüber erhalten Sie eine gesonderte Nachricht.

Bei Fragen wenden Sie sich bitte unter Angabe Ihrer Buchungsnummer an uns. Wir hoffen, Sie bald auf einer anderen Reise begrüßen zu dürfen.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_CANCELLED", Channel: Email, Locale: "en",
		Subject: "Cancellation confirmed: {{tour_name}} ({{booking_reference}})",
		Body: `Dear {{passenger_name}},

We confirm that your booking has been cancelled.

Tour: **{{tour_name}}**\
Departure: **{{departure_date}}**\
Booking reference: **{{booking_reference}}**\
Cancellation fee: **{{cancellation_fee}}**

The cancellation fee is based on our terms and conditions. If you have already paid more than this, we will refund the difference and confirm it in a separate message.

If you have any questions, please contact us quoting your booking reference. We hope to welcome you on another trip soon.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_CANCELLED", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"Ihre Buchung {{booking_reference}} für *{{tour_name}}* am {{departure_date}} wurde storniert. Stornogebühr: {{cancellation_fee}}.\n\n" +
			"Haben Sie bereits mehr gezahlt, erstatten wir Ihnen den Differenzbetrag; dazu erhalten Sie eine gesonderte Nachricht.\n\n" +
			"Bei Fragen sind wir gern für Sie da.",
	},
	{
		Event: "BOOKING_CANCELLED", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"Your booking {{booking_reference}} for *{{tour_name}}* on {{departure_date}} has been cancelled. Cancellation fee: {{cancellation_fee}}.\n\n" +
			"If you have already paid more than this, we will refund the difference and confirm it in a separate message.\n\n" +
			"If you have any questions, we are happy to help.",
	},
	{
		Event: "BOOKING_CANCELLED", Channel: SMS, Locale: "de-DE",
		Body: "Ihre Buchung {{booking_reference}} für {{tour_name}} am {{departure_date}} wurde storniert. Stornogebühr: {{cancellation_fee}}. Zu viel Gezahltes erstatten wir Ihnen gesondert.",
	},
	{
		Event: "BOOKING_CANCELLED", Channel: SMS, Locale: "en",
		Body: "Your booking {{booking_reference}} for {{tour_name}} on {{departure_date}} has been cancelled. Cancellation fee: {{cancellation_fee}}. We will refund any overpayment separately.",
	},

	// BOOKING_REFUNDED
	{
		Event: "BOOKING_REFUNDED", Channel: Email, Locale: "de-DE",
		Subject: "Erstattung zu Ihrer Buchung {{booking_reference}}",
		Body: `Guten Tag {{passenger_name}},

für Ihre Buchung **{{booking_reference}}** haben wir Ihnen **{{refund_amount}}** erstattet.

Die Erstattung erfolgt in der Regel über die ursprünglich verwendete Zahlungsart. Je nach Bank oder Kartenanbieter kann es einige Werktage dauern, bis der Betrag auf Ihrem Konto sichtbar ist.

Bei Fragen wenden Sie sich bitte unter Angabe Ihrer Buchungsnummer an uns.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_REFUNDED", Channel: Email, Locale: "en",
		Subject: "Refund for your booking {{booking_reference}}",
		Body: `Dear {{passenger_name}},

We have refunded **{{refund_amount}}** for your booking **{{booking_reference}}**.

The refund is usually made to the payment method you originally used. Depending on your bank or card provider, it may take a few working days to appear in your account.

If you have any questions, please contact us quoting your booking reference.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// BOOKING_COMPLETED
	{
		Event: "BOOKING_COMPLETED", Channel: Email, Locale: "de-DE",
		Subject: "Wie war Ihre Reise „{{tour_name}}“?",
		Body: `Guten Tag {{passenger_name}},

wir hoffen, Sie sind gut wieder zu Hause angekommen und hatten eine schöne Zeit auf unserer Reise **{{tour_name}}**.

Ihre Meinung ist uns wichtig: Erzählen Sie uns in wenigen Minuten, was Ihnen gefallen hat und was wir noch besser machen können.

[Jetzt Feedback geben]({{feedback_url}})

Vielen Dank, dass Sie mit uns gereist sind. Wir freuen uns, Sie bald wieder an Bord begrüßen zu dürfen.

Mit freundlichen Grüßen\
Ihr Team von {{operator_name}}`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_COMPLETED", Channel: Email, Locale: "en",
		Subject: "How was {{tour_name}}?",
		Body: `Dear {{passenger_name}},

We hope you have arrived home safely and enjoyed your time on **{{tour_name}}**.

Your opinion matters to us. It only takes a few minutes to tell us what you liked and what we could do even better.

[Share your feedback]({{feedback_url}})

Thank you for travelling with us. We look forward to welcoming you on board again soon.

Kind regards\
The {{operator_name}} team`,
		Format: BodyMarkdown,
	},

	// BOOKING_NOSHOW
	{
		Event: "BOOKING_NOSHOW", Channel: Email, Locale: "de-DE",
		Subject: "Wir haben Sie beim Einstieg vermisst ({{booking_reference}})",
		Body: `Guten Tag {{passenger_name}},

leider haben wir Sie beim Einstieg zu Ihrer Reise **{{tour_name}}** nicht angetroffen und mussten ohne Sie abfahren.

Buchungsnummer: **{{booking_reference}}**

Wir hoffen, dass alles in Ordnung ist. Wenn es sich um ein Missverständnis handelt oder Sie Fragen zu Ihrer Buchung haben, melden Sie sich bitte unter Angabe Ihrer Buchungsnummer bei uns. Für die Kosten bei Nichtantritt der Reise gelten unsere Reisebedingungen.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "BOOKING_NOSHOW", Channel: Email, Locale: "en",
		Subject: "We missed you at boarding ({{booking_reference}})",
		Body: `Dear {{passenger_name}},

Unfortunately we could not find you at boarding for your trip **{{tour_name}}**, so we had to depart without you.

Booking reference: **{{booking_reference}}**

We hope everything is all right. If there has been a misunderstanding or you have any questions about your booking, please contact us quoting your booking reference. Our terms and conditions apply to the costs of a missed departure.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// CHECKOUT_ABANDONED
	{
		Event: "CHECKOUT_ABANDONED", Channel: Email, Locale: "de-DE",
		Subject: "Ihre Buchung für {{tour_name}} ist noch nicht abgeschlossen",
		Body: `Guten Tag {{passenger_name}},

Sie haben mit der Buchung unserer Reise **{{tour_name}}** begonnen, sie aber noch nicht abgeschlossen (Grund: {{expiry_reason}}).

Über den folgenden Link können Sie Ihre Buchung ganz einfach fortsetzen:

[Buchung jetzt abschließen]({{checkout_url}})

Bitte beachten Sie, dass die Plätze begrenzt sind und wir sie erst mit Abschluss der Buchung für Sie reservieren können.

Haben Sie Fragen zur Reise oder zur Buchung? Wir helfen Ihnen gern weiter.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "CHECKOUT_ABANDONED", Channel: Email, Locale: "en",
		Subject: "Your booking for {{tour_name}} is not complete yet",
		Body: `Dear {{passenger_name}},

You started booking **{{tour_name}}** but have not completed it yet (reason: {{expiry_reason}}).

You can pick up where you left off using the link below:

[Complete your booking]({{checkout_url}})

Please note that seats are limited and we can only reserve yours once your booking is complete.

If you have any questions about the trip or the booking, we will be happy to help.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// CHECKOUT_ABANDONED_WHATSAPP
	{
		Event: "CHECKOUT_ABANDONED_WHATSAPP", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"Sie haben vor Kurzem mit der Buchung unserer Reise *{{tour_name}}* begonnen, sie aber noch nicht abgeschlossen.\n\n" +
			"Hier können Sie Ihre Buchung fortsetzen:\n{{checkout_url}}\n\n" +
			"Die Plätze sind begrenzt. Bei Fragen antworten Sie einfach auf diese Nachricht.",
	},
	{
		Event: "CHECKOUT_ABANDONED_WHATSAPP", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"You recently started booking *{{tour_name}}* but have not completed it yet.\n\n" +
			"You can continue your booking here:\n{{checkout_url}}\n\n" +
			"Seats are limited. If you have any questions, just reply to this message.",
	},
	{
		Event: "CHECKOUT_ABANDONED_WHATSAPP", Channel: SMS, Locale: "de-DE",
		Body: "Ihre Buchung für {{tour_name}} ist noch nicht abgeschlossen. Die Plätze sind begrenzt. Jetzt fortsetzen: {{checkout_url}}",
	},
	{
		Event: "CHECKOUT_ABANDONED_WHATSAPP", Channel: SMS, Locale: "en",
		Body: "Your booking for {{tour_name}} is not complete yet. Seats are limited. Continue here: {{checkout_url}}",
	},

	// FINAL_PAYMENT_DUE
	{
		Event: "FINAL_PAYMENT_DUE", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"Ihre Reise *{{tour_name}}* am {{departure_date}} rückt näher! Die Restzahlung von *{{remaining_amount}}* ist jetzt fällig.\n\n" +
			"Hier können Sie online bezahlen:\n{{payment_link}}\n\n" +
			"Falls Sie bereits bezahlt haben, betrachten Sie diese Nachricht bitte als gegenstandslos.",
	},
	{
		Event: "FINAL_PAYMENT_DUE", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"Your trip *{{tour_name}}* on {{departure_date}} is getting closer! The final payment of *{{remaining_amount}}* is now due.\n\n" +
			"You can pay online here:\n{{payment_link}}\n\n" +
			"If you have already paid, please disregard this message.",
	},
	{
		Event: "FINAL_PAYMENT_DUE", Channel: Email, Locale: "de-DE",
		Subject: "Restzahlung fällig: {{tour_name}} am {{departure_date}}",
		Body: `Guten Tag {{passenger_name}},

Ihre Reise **{{tour_name}}** am **{{departure_date}}** rückt näher – wir freuen uns schon auf Sie! Die Restzahlung für Ihre Buchung ist jetzt fällig.

Offener Betrag: **{{remaining_amount}}**

Sie können bequem online bezahlen: [Restbetrag jetzt bezahlen]({{payment_link}})

Sollten Sie die Zahlung bereits veranlasst haben, betrachten Sie diese Nachricht bitte als gegenstandslos.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "FINAL_PAYMENT_DUE", Channel: Email, Locale: "en",
		Subject: "Final payment due: {{tour_name}} on {{departure_date}}",
		Body: `Dear {{passenger_name}},

Your trip **{{tour_name}}** on **{{departure_date}}** is getting closer and we are looking forward to seeing you! The final payment for your booking is now due.

Amount outstanding: **{{remaining_amount}}**

You can pay online here: [Pay the balance now]({{payment_link}})

If you have already made the payment, please disregard this message.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "FINAL_PAYMENT_DUE", Channel: SMS, Locale: "de-DE",
		Body: "Die Restzahlung von {{remaining_amount}} für Ihre Reise {{tour_name}} am {{departure_date}} ist jetzt fällig. Jetzt bezahlen: {{payment_link}}",
	},
	{
		Event: "FINAL_PAYMENT_DUE", Channel: SMS, Locale: "en",
		Body: "The final payment of {{remaining_amount}} for your trip {{tour_name}} on {{departure_date}} is now due. Pay online: {{payment_link}}",
	},

	// FINAL_PAYMENT_OVERDUE
	{
		Event: "FINAL_PAYMENT_OVERDUE", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"die Restzahlung von *{{remaining_amount}}* für Ihre Reise *{{tour_name}}* am {{departure_date}} ist seit {{days_overdue}} Tag(en) überfällig.\n\n" +
			"Bitte bezahlen Sie den Betrag möglichst bald hier:\n{{payment_link}}\n\n" +
			"Falls sich Ihre Zahlung mit dieser Nachricht überschnitten hat, betrachten Sie sie bitte als gegenstandslos.",
	},
	{
		Event: "FINAL_PAYMENT_OVERDUE", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"The final payment of *{{remaining_amount}}* for your trip *{{tour_name}}* on {{departure_date}} is now {{days_overdue}} day(s) overdue.\n\n" +
			"Please pay as soon as possible here:\n{{payment_link}}\n\n" +
			"If your payment has crossed with this message, please disregard it.",
	},
	{
		Event: "FINAL_PAYMENT_OVERDUE", Channel: Email, Locale: "de-DE",
		Subject: "Zahlungserinnerung: Restzahlung für {{tour_name}} überfällig",
		Body: `Guten Tag {{passenger_name}},

die Restzahlung für Ihre Reise **{{tour_name}}** am **{{departure_date}}** ist leider noch nicht bei uns eingegangen.

Offener Betrag: **{{remaining_amount}}**\
Überfällig seit: **{{days_overdue}} Tag(en)**

Bitte begleichen Sie den Betrag möglichst umgehend, damit Ihrer Reise nichts im Wege steht: [Restbetrag jetzt bezahlen]({{payment_link}})

Sollte sich Ihre Zahlung mit dieser Erinnerung überschnitten haben, betrachten Sie diese Nachricht bitte als gegenstandslos. Bei Fragen zur Zahlung sind wir gern für Sie da.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "FINAL_PAYMENT_OVERDUE", Channel: Email, Locale: "en",
		Subject: "Payment reminder: final payment for {{tour_name}} overdue",
		Body: `Dear {{passenger_name}},

According to our records, we have not yet received the final payment for your trip **{{tour_name}}** on **{{departure_date}}**.

Amount outstanding: **{{remaining_amount}}**\
Days overdue: **{{days_overdue}}**

Please settle the balance as soon as possible so that nothing stands in the way of your trip: [Pay the balance now]({{payment_link}})

If your payment has crossed with this reminder, please disregard this message. If you have any questions about the payment, please get in touch.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "FINAL_PAYMENT_OVERDUE", Channel: SMS, Locale: "de-DE",
		Body: "Die Restzahlung von {{remaining_amount}} für Ihre Reise {{tour_name}} am {{departure_date}} ist seit {{days_overdue}} Tag(en) überfällig. Bitte bezahlen Sie umgehend hier: {{payment_link}}",
	},
	{
		Event: "FINAL_PAYMENT_OVERDUE", Channel: SMS, Locale: "en",
		Body: "The final payment of {{remaining_amount}} for your trip {{tour_name}} on {{departure_date}} is {{days_overdue}} day(s) overdue. Please pay as soon as possible here: {{payment_link}}",
	},

	// PASSENGER_CANCELLED: passenger_name is the passenger taken off the
	// booking, who need not be the recipient, so the greeting uses the
	// recipient's name.
	{
		Event: "PASSENGER_CANCELLED", Channel: Email, Locale: "de-DE",
		Subject: "Teilnahme storniert: {{passenger_name}}, {{tour_name}}",
		Body: `Guten Tag {{recipient_name}},

hiermit bestätigen wir, dass **{{passenger_name}}** von der Reise **{{tour_name}}** abgemeldet wurde. Alle übrigen Angaben Ihrer Buchung bleiben unverändert.

Stornogebühr: **{{cancellation_fee}}**\
Erstattungsbetrag: **{{refund_amount}}**

Die Stornogebühr richtet sich nach unseren Reisebedingungen. Die Erstattung erfolgt in der Regel über die ursprünglich verwendete Zahlungsart; es kann einige Werktage dauern, bis der Betrag auf Ihrem Konto sichtbar ist.

Bei Fragen sind wir gern für Sie da.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "PASSENGER_CANCELLED", Channel: Email, Locale: "en",
		Subject: "Passenger cancelled: {{passenger_name}}, {{tour_name}}",
		Body: `Dear {{recipient_name}},

We confirm that **{{passenger_name}}** has been removed from the trip **{{tour_name}}**. The rest of your booking remains unchanged.

Cancellation fee: **{{cancellation_fee}}**\
Refund amount: **{{refund_amount}}**

The cancellation fee is based on our terms and conditions. The refund is usually made to the payment method originally used and may take a few working days to appear in your account.

If you have any questions, we are happy to help.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// ANCILLARY_CANCELLED
	{
		Event: "ANCILLARY_CANCELLED", Channel: Email, Locale: "de-DE",
		Subject: "Zusatzleistung storniert: {{ancillary_label}}",
		Body: `Guten Tag {{passenger_name}},

wir bestätigen die Stornierung der folgenden Zusatzleistung zu Ihrer Buchung: **{{ancillary_label}}**.

Erstattungsbetrag: **{{refund_amount}}**

Die Erstattung erfolgt in der Regel über die ursprünglich verwendete Zahlungsart. Ihre Reise und alle weiteren gebuchten Leistungen bleiben unverändert.

Bei Fragen sind wir gern für Sie da.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "ANCILLARY_CANCELLED", Channel: Email, Locale: "en",
		Subject: "Extra cancelled: {{ancillary_label}}",
		Body: `Dear {{passenger_name}},

We confirm that the following extra has been cancelled from your booking: **{{ancillary_label}}**.

Refund amount: **{{refund_amount}}**

The refund is usually made to the payment method originally used. Your trip and all other services you have booked remain unchanged.

If you have any questions, we are happy to help.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// PASSENGER_ADDED: as with PASSENGER_CANCELLED, passenger_name is the
	// added passenger and the greeting uses the recipient's name.
	{
		Event: "PASSENGER_ADDED", Channel: Email, Locale: "de-DE",
		Subject: "Reiseteilnehmer hinzugefügt: {{tour_name}} am {{departure_date}}",
		Body: `Guten Tag {{recipient_name}},

wir bestätigen, dass **{{passenger_name}}** zu Ihrer Buchung hinzugefügt wurde.

Reise: **{{tour_name}}**\
Abreise: **{{departure_date}}**\
Zustiegsort: **{{boarding_point_name}}**

Die genaue Abfahrtszeit und alle weiteren Reiseinformationen senden wir Ihnen rechtzeitig vor der Abreise. Bitte prüfen Sie die Angaben und geben Sie uns Bescheid, falls etwas nicht stimmt.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "PASSENGER_ADDED", Channel: Email, Locale: "en",
		Subject: "Passenger added: {{tour_name}} on {{departure_date}}",
		Body: `Dear {{recipient_name}},

We confirm that **{{passenger_name}}** has been added to your booking.

Tour: **{{tour_name}}**\
Departure: **{{departure_date}}**\
Boarding point: **{{boarding_point_name}}**

We will send you the exact departure time and all other travel information in good time before the trip. Please check these details and let us know if anything is not correct.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "PASSENGER_ADDED", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{recipient_name}},\n\n" +
			"{{passenger_name}} wurde zu Ihrer Buchung hinzugefügt:\n\n" +
			"*{{tour_name}}*\nAbreise: {{departure_date}}\nZustiegsort: {{boarding_point_name}}\n\n" +
			"Weitere Reiseinformationen erhalten Sie rechtzeitig vor der Abreise.",
	},
	{
		Event: "PASSENGER_ADDED", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{recipient_name}},\n\n" +
			"{{passenger_name}} has been added to your booking:\n\n" +
			"*{{tour_name}}*\nDeparture: {{departure_date}}\nBoarding point: {{boarding_point_name}}\n\n" +
			"We will send you further travel information in good time before departure.",
	},
	{
		Event: "PASSENGER_ADDED", Channel: SMS, Locale: "de-DE",
		Body: "{{passenger_name}} wurde zu Ihrer Buchung hinzugefügt: {{tour_name}} am {{departure_date}}, Zustiegsort {{boarding_point_name}}. Weitere Informationen folgen vor der Abreise.",
	},
	{
		Event: "PASSENGER_ADDED", Channel: SMS, Locale: "en",
		Body: "{{passenger_name}} has been added to your booking: {{tour_name}} on {{departure_date}}, boarding point {{boarding_point_name}}. Further details will follow before departure.",
	},

	// INVOICE_ISSUED
	{
		Event: "INVOICE_ISSUED", Channel: Email, Locale: "de-DE",
		Subject: "Ihre Rechnung {{invoice_number}} zur Buchung {{booking_reference}}",
		Body: `Guten Tag {{passenger_name}},

für Ihre Buchung **{{booking_reference}}** haben wir die Rechnung **{{invoice_number}}** ausgestellt.

Rechnungsbetrag (brutto): **{{total_gross}}**

Sie können die Rechnung hier als PDF abrufen: [Rechnung {{invoice_number}} (PDF)]({{invoice_pdf_url}})

Bitte bewahren Sie die Rechnung für Ihre Unterlagen auf. Bei Fragen wenden Sie sich bitte unter Angabe der Rechnungsnummer an uns.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "INVOICE_ISSUED", Channel: Email, Locale: "en",
		Subject: "Your invoice {{invoice_number}} for booking {{booking_reference}}",
		Body: `Dear {{passenger_name}},

We have issued invoice **{{invoice_number}}** for your booking **{{booking_reference}}**.

Invoice total (gross): **{{total_gross}}**

You can download the invoice as a PDF here: [Invoice {{invoice_number}} (PDF)]({{invoice_pdf_url}})

Please keep the invoice for your records. If you have any questions, please contact us quoting the invoice number.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// SERVICE_LEG_STARTED
	{
		Event: "SERVICE_LEG_STARTED", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"Ihr Bus ist jetzt unterwegs zu Ihrem Zustiegsort *{{boarding_point_name}}*.\n\n" +
			"Hier können Sie die Fahrt verfolgen:\n{{tracking_url}}\n\n" +
			"Bitte seien Sie rechtzeitig am Zustiegsort. Gute Reise!",
	},
	{
		Event: "SERVICE_LEG_STARTED", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"Your coach is now on its way to your boarding point *{{boarding_point_name}}*.\n\n" +
			"You can follow it here:\n{{tracking_url}}\n\n" +
			"Please be at the boarding point in good time. Have a good trip!",
	},
	{
		Event: "SERVICE_LEG_STARTED", Channel: SMS, Locale: "de-DE",
		Body: "Ihr Bus ist jetzt unterwegs zu Ihrem Zustiegsort {{boarding_point_name}}. Hier können Sie die Fahrt verfolgen: {{tracking_url}}",
	},
	{
		Event: "SERVICE_LEG_STARTED", Channel: SMS, Locale: "en",
		Body: "Your coach is now on its way to your boarding point {{boarding_point_name}}. Follow it here: {{tracking_url}}",
	},

	// SERVICE_LEG_CANCELLED
	{
		Event: "SERVICE_LEG_CANCELLED", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"leider fällt ein Fahrtabschnitt Ihrer Reise *{{tour_name}}* aus: die Fahrt ab *{{boarding_point_name}}*.\n\n" +
			"Bitte rufen Sie uns unter {{operator_phone}} an, damit wir gemeinsam eine Alternative finden.\n\n" +
			"Wir bitten um Entschuldigung für die Unannehmlichkeiten.",
	},
	{
		Event: "SERVICE_LEG_CANCELLED", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"We are sorry to tell you that part of your trip *{{tour_name}}* has been cancelled: the service from *{{boarding_point_name}}*.\n\n" +
			"Please call us on {{operator_phone}} so that we can find an alternative for you.\n\n" +
			"We apologise for the inconvenience.",
	},
	{
		Event: "SERVICE_LEG_CANCELLED", Channel: Email, Locale: "de-DE",
		Subject: "Wichtig: Fahrt ab {{boarding_point_name}} fällt aus ({{tour_name}})",
		Body: `Guten Tag {{passenger_name}},

leider müssen wir Ihnen mitteilen, dass ein Fahrtabschnitt Ihrer Reise **{{tour_name}}** ausfällt. Betroffen ist die Fahrt ab **{{boarding_point_name}}**.

Bitte rufen Sie uns unter **{{operator_phone}}** an, damit wir gemeinsam mit Ihnen eine Alternative finden.

Wir bitten um Entschuldigung für die Unannehmlichkeiten.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "SERVICE_LEG_CANCELLED", Channel: Email, Locale: "en",
		Subject: "Important: service from {{boarding_point_name}} cancelled ({{tour_name}})",
		Body: `Dear {{passenger_name}},

We are sorry to let you know that part of your trip **{{tour_name}}** has been cancelled. This affects the service from **{{boarding_point_name}}**.

Please call us on **{{operator_phone}}** so that we can find an alternative for you.

We sincerely apologise for the inconvenience.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "SERVICE_LEG_CANCELLED", Channel: SMS, Locale: "de-DE",
		Body: "Leider fällt die Fahrt ab {{boarding_point_name}} Ihrer Reise {{tour_name}} aus. Bitte rufen Sie uns unter {{operator_phone}} an, damit wir eine Alternative finden.",
	},
	{
		Event: "SERVICE_LEG_CANCELLED", Channel: SMS, Locale: "en",
		Body: "We are sorry: the service from {{boarding_point_name}} on your trip {{tour_name}} has been cancelled. Please call us on {{operator_phone}} so that we can find an alternative.",
	},

	// INCIDENT_BROADCAST and INCIDENT_ALLCLEAR go to everyone on a trip in
	// one event, so they greet each recipient by their own name
	// (recipient_name), not the event's passenger_name.
	// INCIDENT_BROADCAST
	{
		Event: "INCIDENT_BROADCAST", Channel: WhatsApp, Locale: "de-DE",
		Body: "*Wichtige Information zu Ihrer Reise {{tour_name}}*\n\n" +
			"Hallo {{recipient_name}},\n\n" +
			"{{incident_message}}\n\n" +
			"Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir halten Sie auf dem Laufenden.",
	},
	{
		Event: "INCIDENT_BROADCAST", Channel: WhatsApp, Locale: "en",
		Body: "*Important information about your trip {{tour_name}}*\n\n" +
			"Hello {{recipient_name}},\n\n" +
			"{{incident_message}}\n\n" +
			"If you have any questions, please call us on {{operator_phone}}. We will keep you updated.",
	},
	{
		Event: "INCIDENT_BROADCAST", Channel: SMS, Locale: "de-DE",
		Body: "Wichtige Information zu Ihrer Reise {{tour_name}}: {{incident_message}} Bei Fragen: {{operator_phone}}",
	},
	{
		Event: "INCIDENT_BROADCAST", Channel: SMS, Locale: "en",
		Body: "Important information about your trip {{tour_name}}: {{incident_message}} Questions? Call {{operator_phone}}",
	},
	{
		Event: "INCIDENT_BROADCAST", Channel: Email, Locale: "de-DE",
		Subject: "Wichtige Information zu Ihrer Reise {{tour_name}}",
		Body: `Guten Tag {{recipient_name}},

wir haben eine wichtige Information zu Ihrer Reise **{{tour_name}}**:

**{{incident_message}}**

Wir halten Sie auf dem Laufenden und melden uns, sobald es Neuigkeiten gibt. Bei Fragen oder wenn Sie Hilfe benötigen, erreichen Sie uns unter **{{operator_phone}}**.

Vielen Dank für Ihr Verständnis.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "INCIDENT_BROADCAST", Channel: Email, Locale: "en",
		Subject: "Important information about your trip {{tour_name}}",
		Body: `Dear {{recipient_name}},

We have important information about your trip **{{tour_name}}**:

**{{incident_message}}**

We will keep you updated and get back to you as soon as there is news. If you have any questions or need help, you can reach us on **{{operator_phone}}**.

Thank you for your understanding.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// INCIDENT_ALLCLEAR
	{
		Event: "INCIDENT_ALLCLEAR", Channel: WhatsApp, Locale: "de-DE",
		Body: "*Entwarnung zu Ihrer Reise {{tour_name}}*\n\n" +
			"Hallo {{recipient_name}},\n\n" +
			"die zuvor gemeldete Störung ist behoben.\n\n" +
			"{{update_message}}\n\n" +
			"Vielen Dank für Ihre Geduld!",
	},
	{
		Event: "INCIDENT_ALLCLEAR", Channel: WhatsApp, Locale: "en",
		Body: "*All clear for your trip {{tour_name}}*\n\n" +
			"Hello {{recipient_name}},\n\n" +
			"The issue we told you about has been resolved.\n\n" +
			"{{update_message}}\n\n" +
			"Thank you for your patience!",
	},
	{
		Event: "INCIDENT_ALLCLEAR", Channel: SMS, Locale: "de-DE",
		Body: "Entwarnung zu Ihrer Reise {{tour_name}}: {{update_message}} Danke für Ihre Geduld!",
	},
	{
		Event: "INCIDENT_ALLCLEAR", Channel: SMS, Locale: "en",
		Body: "All clear for your trip {{tour_name}}: {{update_message}} Thank you for your patience!",
	},
	{
		Event: "INCIDENT_ALLCLEAR", Channel: Email, Locale: "de-DE",
		Subject: "Entwarnung zu Ihrer Reise {{tour_name}}",
		Body: `Guten Tag {{recipient_name}},

wir haben gute Nachrichten zu Ihrer Reise **{{tour_name}}**: Die zuvor gemeldete Störung ist behoben.

**{{update_message}}**

Vielen Dank für Ihre Geduld und Ihr Verständnis. Wir wünschen Ihnen eine gute Reise.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "INCIDENT_ALLCLEAR", Channel: Email, Locale: "en",
		Subject: "All clear for your trip {{tour_name}}",
		Body: `Dear {{recipient_name}},

Good news about your trip **{{tour_name}}**: the issue we told you about has been resolved.

**{{update_message}}**

Thank you for your patience and understanding. We wish you a pleasant journey.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// VEHICLE_SWAP_NOTIFICATION
	{
		Event: "VEHICLE_SWAP_NOTIFICATION", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"für Ihre Reise setzen wir ein anderes Fahrzeug ein als geplant.\n\n" +
			"Neues Fahrzeug: *{{new_vehicle}}* (statt {{old_vehicle}})\nIhr Sitzplatz: *{{seat_assignment}}*\n\n" +
			"Bitte achten Sie beim Einstieg auf das neue Fahrzeug. Ansonsten bleibt alles wie gebucht.",
	},
	{
		Event: "VEHICLE_SWAP_NOTIFICATION", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"Your trip will run with a different vehicle than planned.\n\n" +
			"New vehicle: *{{new_vehicle}}* (instead of {{old_vehicle}})\nYour seat: *{{seat_assignment}}*\n\n" +
			"Please look out for the new vehicle when boarding. Everything else stays as booked.",
	},
	{
		Event: "VEHICLE_SWAP_NOTIFICATION", Channel: Email, Locale: "de-DE",
		Subject: "Fahrzeugwechsel: Ihr Sitzplatz {{seat_assignment}}",
		Body: `Guten Tag {{passenger_name}},

für Ihre Reise setzen wir ein anderes Fahrzeug ein als ursprünglich geplant.

Bisher vorgesehen: {{old_vehicle}}\
Neues Fahrzeug: **{{new_vehicle}}**\
Ihr Sitzplatz: **{{seat_assignment}}**

Bitte achten Sie beim Einstieg auf das neue Fahrzeug und setzen Sie sich auf den angegebenen Sitzplatz. Alle übrigen Angaben Ihrer Buchung bleiben unverändert.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "VEHICLE_SWAP_NOTIFICATION", Channel: Email, Locale: "en",
		Subject: "Vehicle change: your seat {{seat_assignment}}",
		Body: `Dear {{passenger_name}},

Your trip will run with a different vehicle than originally planned.

Previously planned: {{old_vehicle}}\
New vehicle: **{{new_vehicle}}**\
Your seat: **{{seat_assignment}}**

Please look out for the new vehicle when boarding and take the seat shown above. Everything else about your booking stays the same.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "VEHICLE_SWAP_NOTIFICATION", Channel: SMS, Locale: "de-DE",
		Body: "Fahrzeugwechsel für Ihre Reise: Sie fahren mit {{new_vehicle}} statt mit {{old_vehicle}}. Ihr Sitzplatz: {{seat_assignment}}. Sonst bleibt alles wie gebucht.",
	},
	{
		Event: "VEHICLE_SWAP_NOTIFICATION", Channel: SMS, Locale: "en",
		Body: "Vehicle change for your trip: you will travel on {{new_vehicle}} instead of {{old_vehicle}}. Your seat: {{seat_assignment}}. Everything else stays as booked.",
	},

	// QUALIFICATION_EXPIRING: staff-facing, to the crew member.
	{
		Event: "QUALIFICATION_EXPIRING", Channel: Email, Locale: "de-DE",
		Subject: "Erinnerung: {{qualification_type}} läuft am {{expiry_date}} ab",
		Body: `Guten Tag {{crew_member_name}},

Ihre Qualifikation **{{qualification_type}}** läuft bald ab.

Gültig bis: **{{expiry_date}}**\
Verbleibende Tage: **{{days_remaining}}**

Bitte kümmern Sie sich rechtzeitig um die Verlängerung und reichen Sie den neuen Nachweis anschließend bei der Disposition ein. Ohne gültigen Nachweis können wir Sie nach Ablauf nicht mehr für Einsätze einplanen, die diese Qualifikation erfordern.

Bei Fragen wenden Sie sich bitte an die Disposition.

Viele Grüße\
Ihre Disposition`,
		Format: BodyMarkdown,
	},
	{
		Event: "QUALIFICATION_EXPIRING", Channel: Email, Locale: "en",
		Subject: "Reminder: {{qualification_type}} expires on {{expiry_date}}",
		Body: `Dear {{crew_member_name}},

Your qualification **{{qualification_type}}** will expire soon.

Valid until: **{{expiry_date}}**\
Days remaining: **{{days_remaining}}**

Please arrange the renewal in good time and hand in the new certificate to the dispatch office once you have it. Without a valid certificate we cannot schedule you for duties that require this qualification after it expires.

If you have any questions, please contact the dispatch office.

Kind regards\
Your dispatch team`,
		Format: BodyMarkdown,
	},

	// VEHICLE_INSPECTION_OVERDUE: staff-facing, to fleet staff; the event
	// names no person, so the greeting has no name.
	{
		Event: "VEHICLE_INSPECTION_OVERDUE", Channel: Email, Locale: "de-DE",
		Subject: "Überfällig: {{inspection_type}} für Fahrzeug {{vehicle_license_plate}}",
		Body: `Guten Tag,

für das Fahrzeug **{{vehicle_license_plate}}** ist die folgende Prüfung überfällig: **{{inspection_type}}**.

Fällig am: **{{due_date}}**\
Überfällig seit: **{{days_overdue}} Tag(en)**

Bitte vereinbaren Sie umgehend einen Prüftermin und stimmen Sie mit der Disposition ab, ob und wie das Fahrzeug bis dahin eingesetzt werden kann.

Viele Grüße\
Ihre Disposition`,
		Format: BodyMarkdown,
	},
	{
		Event: "VEHICLE_INSPECTION_OVERDUE", Channel: Email, Locale: "en",
		Subject: "Overdue: {{inspection_type}} for vehicle {{vehicle_license_plate}}",
		Body: `Hello,

The following inspection is overdue for vehicle **{{vehicle_license_plate}}**: **{{inspection_type}}**.

Due date: **{{due_date}}**\
Days overdue: **{{days_overdue}}**

Please book an inspection appointment straight away and agree with the dispatch office whether and how the vehicle may be used until then.

Kind regards\
Your dispatch team`,
		Format: BodyMarkdown,
	},

	// TRIP_CANCELLED goes to everyone on the trip (an audience), so it
	// greets each recipient by their own name.
	{
		Event: "TRIP_CANCELLED", Channel: WhatsApp, Locale: "de-DE",
		Body: "*Ihre Reise {{tour_name}} am {{departure_date}} findet nicht statt*\n\n" +
			"Hallo {{recipient_name}},\n\n" +
			"leider müssen wir die Reise absagen: {{cancellation_reason}}.\n\n" +
			"Bereits gezahlte Beträge erstatten wir vollständig; dazu erhalten Sie eine gesonderte Nachricht. Bei Fragen erreichen Sie uns unter {{operator_phone}}.",
	},
	{
		Event: "TRIP_CANCELLED", Channel: WhatsApp, Locale: "en",
		Body: "*Your trip {{tour_name}} on {{departure_date}} is cancelled*\n\n" +
			"Hello {{recipient_name}},\n\n" +
			"We are sorry to cancel this trip: {{cancellation_reason}}.\n\n" +
			"Everything you have paid will be refunded in full; you will receive a separate message about it. If you have any questions, please call us on {{operator_phone}}.",
	},
	{
		Event: "TRIP_CANCELLED", Channel: SMS, Locale: "de-DE",
		Body: "Ihre Reise {{tour_name}} am {{departure_date}} findet leider nicht statt: {{cancellation_reason}}. Gezahltes erstatten wir vollständig. Fragen: {{operator_phone}}",
	},
	{
		Event: "TRIP_CANCELLED", Channel: SMS, Locale: "en",
		Body: "Your trip {{tour_name}} on {{departure_date}} is cancelled: {{cancellation_reason}}. Everything you paid will be refunded. Questions? Call {{operator_phone}}",
	},
	{
		Event: "TRIP_CANCELLED", Channel: Email, Locale: "de-DE",
		Subject: "Absage: {{tour_name}} am {{departure_date}}",
		Body: `Guten Tag {{recipient_name}},

leider müssen wir Ihre Reise **{{tour_name}}** am **{{departure_date}}** absagen: {{cancellation_reason}}.

Bereits gezahlte Beträge erstatten wir Ihnen vollständig; darüber erhalten Sie eine gesonderte Nachricht. Erinnerungen, die wir Ihnen zu dieser Reise noch geschickt hätten, entfallen.

Bei Fragen erreichen Sie uns unter {{operator_phone}}. Wir bitten um Ihr Verständnis und hoffen, Sie bald auf einer anderen Reise begrüßen zu dürfen.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "TRIP_CANCELLED", Channel: Email, Locale: "en",
		Subject: "Cancelled: {{tour_name}} on {{departure_date}}",
		Body: `Dear {{recipient_name}},

We are sorry to tell you that your trip **{{tour_name}}** on **{{departure_date}}** is cancelled: {{cancellation_reason}}.

Everything you have paid will be refunded in full; you will receive a separate message about it. Reminders we would still have sent you about this trip will not come.

If you have any questions, please call us on {{operator_phone}}. We apologise and hope to welcome you on another trip soon.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},

	// PRE_TRIP_REMINDER
	{
		Event: "PRE_TRIP_REMINDER", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"morgen geht es los: *{{tour_name}}*!\n\n" +
			"Datum: {{departure_date}}\nZustiegszeit: *{{boarding_time}} Uhr*\nZustiegsort: *{{boarding_point_name}}*\n\n" +
			"Bitte beachten Sie: {{passenger_instructions}}\n\n" +
			"Wir wünschen Ihnen eine gute Reise!",
	},
	{
		Event: "PRE_TRIP_REMINDER", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"Your trip *{{tour_name}}* starts tomorrow!\n\n" +
			"Date: {{departure_date}}\nBoarding time: *{{boarding_time}}*\nBoarding point: *{{boarding_point_name}}*\n\n" +
			"Please note: {{passenger_instructions}}\n\n" +
			"Have a wonderful trip!",
	},
	{
		Event: "PRE_TRIP_REMINDER", Channel: Email, Locale: "de-DE",
		Subject: "Morgen geht es los: {{tour_name}}",
		Body: `Guten Tag {{passenger_name}},

morgen ist es so weit: Ihre Reise **{{tour_name}}** beginnt. Hier noch einmal alle wichtigen Informationen für die Abfahrt:

Datum: **{{departure_date}}**\
Zustiegszeit: **{{boarding_time}} Uhr**\
Zustiegsort: **{{boarding_point_name}}**

**Bitte beachten Sie:** {{passenger_instructions}}

Bitte seien Sie rechtzeitig am Zustiegsort. Sollten Sie kurzfristig verhindert sein, geben Sie uns bitte so bald wie möglich Bescheid.

Wir wünschen Ihnen eine gute Reise!

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "PRE_TRIP_REMINDER", Channel: Email, Locale: "en",
		Subject: "Your trip starts tomorrow: {{tour_name}}",
		Body: `Dear {{passenger_name}},

It is almost time: your trip **{{tour_name}}** starts tomorrow. Here are the key details for your departure once more:

Date: **{{departure_date}}**\
Boarding time: **{{boarding_time}}**\
Boarding point: **{{boarding_point_name}}**

**Please note:** {{passenger_instructions}}

Please be at the boarding point in good time. If you are unable to travel at short notice, please let us know as soon as possible.

We wish you a wonderful trip!

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "PRE_TRIP_REMINDER", Channel: SMS, Locale: "de-DE",
		Body: "Morgen geht es los: {{tour_name}} am {{departure_date}}. Zustieg um {{boarding_time}} Uhr, {{boarding_point_name}}. Bitte beachten Sie: {{passenger_instructions}} {{files}}",
	},
	{
		Event: "PRE_TRIP_REMINDER", Channel: SMS, Locale: "en",
		Body: "Your trip {{tour_name}} starts tomorrow, {{departure_date}}. Boarding at {{boarding_time}}, {{boarding_point_name}}. Please note: {{passenger_instructions}} {{files}}",
	},

	// DEPARTURE_CHANGED
	{
		Event: "DEPARTURE_CHANGED", Channel: WhatsApp, Locale: "de-DE",
		Body: "Hallo {{passenger_name}},\n\n" +
			"die Abfahrt Ihrer Reise *{{tour_name}}* hat sich geändert.\n\n" +
			"Neue Abfahrt: *{{departure_at}}*\nZustiegsort: *{{boarding_point_name}}*\n\n" +
			"Ihre Erinnerungen kommen zur neuen Zeit. Gute Reise!",
	},
	{
		Event: "DEPARTURE_CHANGED", Channel: WhatsApp, Locale: "en",
		Body: "Hello {{passenger_name}},\n\n" +
			"The departure of your trip *{{tour_name}}* has changed.\n\n" +
			"New departure: *{{departure_at}}*\nBoarding point: *{{boarding_point_name}}*\n\n" +
			"Your reminders will follow the new time. Have a good trip!",
	},
	{
		Event: "DEPARTURE_CHANGED", Channel: Email, Locale: "de-DE",
		Subject: "Neue Abfahrtszeit: {{tour_name}}",
		Body: `Guten Tag {{passenger_name}},

die Abfahrt Ihrer Reise **{{tour_name}}** hat sich geändert.

Neue Abfahrt: **{{departure_at}}**\
Zustiegsort: **{{boarding_point_name}}**

Ihre Erinnerungen vor der Abfahrt erhalten Sie passend zur neuen Zeit.

Mit freundlichen Grüßen\
Ihr Reiseteam`,
		Format: BodyMarkdown,
	},
	{
		Event: "DEPARTURE_CHANGED", Channel: Email, Locale: "en",
		Subject: "New departure time: {{tour_name}}",
		Body: `Dear {{passenger_name}},

The departure of your trip **{{tour_name}}** has changed.

New departure: **{{departure_at}}**\
Boarding point: **{{boarding_point_name}}**

Your reminders before departure will follow the new time.

Kind regards\
Your travel team`,
		Format: BodyMarkdown,
	},
	{
		Event: "DEPARTURE_CHANGED", Channel: SMS, Locale: "de-DE",
		Body: "Neue Abfahrtszeit für {{tour_name}}: {{departure_at}}, Zustieg {{boarding_point_name}}.",
	},
	{
		Event: "DEPARTURE_CHANGED", Channel: SMS, Locale: "en",
		Body: "New departure time for {{tour_name}}: {{departure_at}}, boarding at {{boarding_point_name}}.",
	},
}
