// Package views renders the console's pages with templ. Every page takes typed
// props built by web's handlers from the console's services; views never see
// a database, a fiber context or the request, so a page is a pure function of
// its props (TestLayering checks that views imports no db). The *.templ files
// are the source; `go tool task generate` writes the *_templ.go files beside
// them, which are committed.
package views
