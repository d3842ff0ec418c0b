package app

import (
	"bytes"
	_ "embed"
	"image"
	"image/png"

	"github.com/heraldhq/herald/app/provider"
)

// sampleDocument is the example file Meta's reviewers see for a template
// with a DOCUMENT header: a one-page PDF that says it is a sample. The
// real messages carry the booking's own file there.
//
//go:embed samples/sample_document.pdf
var sampleDocument []byte

// headerSample is the example file of a Meta template's media header.
func headerSample(header string) (*provider.File, error) {
	switch header {
	case MetaHeaderDocument:
		return &provider.File{Filename: "sample.pdf", ContentType: "application/pdf", Content: sampleDocument}, nil
	case MetaHeaderImage:
		// A plain 800x418 image (WhatsApp's header shape, 1.91:1) in
		// the console's accent colour.
		img := image.NewRGBA(image.Rect(0, 0, 800, 418))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = 0x1f, 0x5f, 0x8b, 0xff
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			return nil, err
		}
		return &provider.File{Filename: "sample.png", ContentType: "image/png", Content: buf.Bytes()}, nil
	}
	return nil, nil
}
