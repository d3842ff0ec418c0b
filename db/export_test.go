package db

// ContactCandidatesQuery lets the tests read the statement's plan.
const ContactCandidatesQuery = contactCandidatesQuery
