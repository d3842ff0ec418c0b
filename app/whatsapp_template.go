package app

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Meta template categories. Herald's events are transactional updates about
// a booking the person made, which Meta bills as UTILITY.
const (
	MetaCategoryUtility   = "UTILITY"
	MetaCategoryMarketing = "MARKETING"
)

// Meta template review statuses, as the Graph API and the
// message_template_status_update webhook spell them.
const (
	MetaTemplateApproved = "APPROVED"
	MetaTemplatePending  = "PENDING"
	MetaTemplateRejected = "REJECTED"
	MetaTemplatePaused   = "PAUSED"
	MetaTemplateDisabled = "DISABLED"
)

// MetaTemplatePrefix starts the name of every Meta template Herald derives
// from a default, so a tenant sees in WhatsApp Manager which ones are ours.
const MetaTemplatePrefix = "herald_"

// metaBodyMax is Meta's limit on a template body's text.
const metaBodyMax = 1024

// metaNamePattern is what Meta accepts as a template name: lower-case
// letters, digits and underscores, at most 512 characters.
var metaNamePattern = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)

// metaLanguages are the language codes Meta accepts for message templates
// (WhatsApp "Supported languages"); a locale maps onto the first of
// language_REGION and language that Meta knows.
var metaLanguages = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(`af sq ar ar_EG ar_AE ar_LB ar_MA ar_QA az be_BY bn bn_IN bg ca zh_CN zh_HK zh_TW hr cs da prs_AF nl nl_BE
		en en_GB en_US en_AE en_AU en_CA en_GH en_IE en_IN en_JM en_MY en_NZ en_QA en_SG en_UG en_ZA et fil fi fr fr_BE fr_CA fr_CH fr_CI fr_MA
		ka de de_AT de_CH el gu ha he hi hu id ga it ja kn kk rw_RW ko ky_KG lo lv lt mk ms ml mr nb ps_AF fa pl pt_BR pt_PT pa ro ru sr si_LK
		sk sl es es_AR es_CL es_CO es_CR es_DO es_EC es_HN es_MX es_PA es_PE es_ES es_UY sw sv ta te th tr uk ur uz vi zu`) {
		m[c] = true
	}
	return m
}()

// MetaLanguage returns the Meta template language code of a Herald locale
// ("de-DE" -> "de", "en-GB" -> "en_GB", "en" -> "en"), or "" when Meta has
// no templates in that language.
func MetaLanguage(locale string) string {
	lang, region, hasRegion := strings.Cut(strings.ReplaceAll(locale, "_", "-"), "-")
	lang = strings.ToLower(lang)
	if hasRegion {
		if code := lang + "_" + strings.ToUpper(region); metaLanguages[code] {
			return code
		}
	}
	if metaLanguages[lang] {
		return lang
	}
	return ""
}

// MetaTemplateName is the name of the Meta template derived from an event's
// default WhatsApp text: herald_ and the event's name in lower case. Both
// locales share the name; Meta keeps one translation per language under it.
func MetaTemplateName(event string) string {
	return MetaTemplatePrefix + strings.ToLower(event)
}

// DeriveMetaTemplate turns a Herald WhatsApp body into the Meta template a
// tenant submits for approval: the same text with each {{variable}} replaced
// by a numbered parameter, and the list of the event's variables that fill
// them ({{1}} is Parameters[0]). Meta rejects bodies whose numbers do not run
// {{1}}, {{2}}, ... without gaps as one reads them, so the numbers follow
// the order in which the text first uses each variable (which is the
// event's variable order wherever the sentence allows it); a variable used
// twice keeps its number.
func DeriveMetaTemplate(event *EventDef, locale, body string) (*WhatsAppTemplateSpec, error) {
	known := map[string]bool{}
	for _, v := range append(append([]string(nil), event.Variables...), RecipientVariables...) {
		known[v] = true
	}
	number := map[string]int{}
	var params []string
	for _, p := range Placeholders(body) {
		if !known[p] {
			return nil, fmt.Errorf("%s: placeholder {{%s}} is not a variable of the event", event.Name, p)
		}
		params = append(params, p)
		number[p] = len(params)
	}
	metaBody := placeholderPattern.ReplaceAllStringFunc(body, func(m string) string {
		name := strings.ToLower(placeholderPattern.FindStringSubmatch(m)[1])
		return "{{" + strconv.Itoa(number[name]) + "}}"
	})
	spec := &WhatsAppTemplateSpec{
		Name: MetaTemplateName(event.Name), Language: MetaLanguage(locale), Category: MetaCategoryUtility,
		Body: metaBody, Parameters: params,
	}
	if err := ValidateMetaTemplate(spec); err != nil {
		return nil, fmt.Errorf("%s/%s: %w", event.Name, locale, err)
	}
	return spec, nil
}

var numberedParam = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// ValidateMetaTemplate checks a Meta template against the rules Meta's
// review applies mechanically: a valid name and language, a known category,
// a body of at most 1,024 characters whose parameters are {{1}}..{{n}} in
// order of first use, one per named parameter, and that neither starts nor
// ends with a parameter. A spec without a body (a template created in
// WhatsApp Manager and only named here) is checked for name and language.
func ValidateMetaTemplate(s *WhatsAppTemplateSpec) error {
	switch {
	case !metaNamePattern.MatchString(s.Name):
		return FieldErrorf("whatsapp_template", "Meta template names use lower-case letters, digits and underscores only (%q).", s.Name)
	case !metaLanguages[s.Language]:
		return FieldErrorf("whatsapp_template", "%q is not a language code Meta accepts for templates.", s.Language)
	case s.Category != "" && s.Category != MetaCategoryUtility && s.Category != MetaCategoryMarketing:
		return FieldErrorf("whatsapp_template", "Category must be UTILITY or MARKETING.")
	case s.Header != "" && s.Header != MetaHeaderDocument && s.Header != MetaHeaderImage:
		return FieldErrorf("whatsapp_template", "The header is DOCUMENT, IMAGE or none, not %q.", s.Header)
	case s.Body == "":
		return nil
	case len([]rune(s.Body)) > metaBodyMax:
		return FieldErrorf("whatsapp_template", "A Meta template body may have at most %d characters.", metaBodyMax)
	}
	trimmed := strings.TrimSpace(s.Body)
	if strings.HasPrefix(trimmed, "{{") || strings.HasSuffix(trimmed, "}}") {
		return FieldErrorf("whatsapp_template", "Meta rejects a template body that starts or ends with a parameter.")
	}
	next := 1
	for _, m := range numberedParam.FindAllStringSubmatch(s.Body, -1) {
		n, err := strconv.Atoi(m[1])
		switch {
		case err != nil:
			return FieldErrorf("whatsapp_template", "Meta template parameters are numbered: {{%s}} is not.", m[1])
		case n == next:
			next++
		case n > next:
			return FieldErrorf("whatsapp_template", "Meta template parameters must be numbered in order of use: {{%d}} comes before {{%d}}.", n, next)
		}
	}
	if next-1 != len(s.Parameters) {
		return FieldErrorf("whatsapp_template", "The body uses %d parameters but %d variables fill them.", next-1, len(s.Parameters))
	}
	return nil
}

// MetaTemplate is one message template of a channel account's WhatsApp
// Business Account as Meta last reported it: by the Graph API's list, the
// answer to a submission, or a message_template_status_update webhook.
type MetaTemplate struct {
	TenantID         uuid.UUID `db:"tenant_id"`
	ChannelAccountID uuid.UUID `db:"channel_account_id"`
	Name             string    `db:"name"`
	Language         string    `db:"language"`
	MetaID           string    `db:"meta_id"`
	Status           string    `db:"status"`
	Category         string    `db:"category"`
	RejectedReason   string    `db:"rejected_reason"`
	Body             string    `db:"body"`
	// HeaderFormat is the template's header format as Meta reports it
	// (provider.MessageTemplate.HeaderFormat).
	HeaderFormat string    `db:"header_format"`
	SyncedAt     time.Time `db:"synced_at"`
}

// Approved reports whether Meta lets the template be sent.
func (t *MetaTemplate) Approved() bool { return t != nil && t.Status == MetaTemplateApproved }
