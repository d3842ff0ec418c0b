package db

// ContactCandidatesQuery lets the tests read the statement's plan.
const ContactCandidatesQuery = contactCandidatesQuery

// MessagesByExternalIDsQuery lets the tests read the statement's plan.
const MessagesByExternalIDsQuery = messagesByExternalIDsQuery

// DeleteInboxReceiptsQuery lets the tests read the statement's plan.
const DeleteInboxReceiptsQuery = deleteInboxReceiptsQuery
