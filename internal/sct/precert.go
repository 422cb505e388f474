package sct

import (
	"bytes"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// oidSCTList is the DER content of OID 1.3.6.1.4.1.11129.2.4.2.
var oidSCTList = []byte{0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02}

var tagExtensions = asn1.Tag(3).Constructed().ContextSpecific()

// precertTBS returns raw, a DER TBSCertificate, without its SCT list
// extension (every other byte kept: the log signed the precertificate's
// bytes, not a re-encoding) and that extension's value.
func precertTBS(raw []byte) (tbs, ext []byte, err error) {
	in := cryptobyte.String(raw)
	var body cryptobyte.String
	if len(raw) > maxTBS || !in.ReadASN1(&body, asn1.SEQUENCE) || !in.Empty() {
		return nil, nil, fmt.Errorf("%w: TBSCertificate is not one DER SEQUENCE of at most %d bytes", ErrInvalid, maxTBS)
	}
	seen, found := false, false
	b := cryptobyte.NewBuilder(make([]byte, 0, len(raw)))
	b.AddASN1(asn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for !body.Empty() {
			var field, wrapped, exts cryptobyte.String
			var tag asn1.Tag
			if !body.ReadAnyASN1Element(&field, &tag) {
				b.SetError(fmt.Errorf("%w: TBSCertificate field is not DER", ErrInvalid))
				return
			}
			if tag != tagExtensions {
				b.AddBytes(field)
				continue
			}
			if seen || !field.ReadASN1(&wrapped, tagExtensions) || !wrapped.ReadASN1(&exts, asn1.SEQUENCE) || !wrapped.Empty() {
				b.SetError(fmt.Errorf("%w: TBSCertificate extensions are not one DER SEQUENCE", ErrInvalid))
				return
			}
			seen = true
			b.AddASN1(tagExtensions, func(b *cryptobyte.Builder) {
				b.AddASN1(asn1.SEQUENCE, func(b *cryptobyte.Builder) { ext, found = dropSCTList(b, exts) })
			})
		}
	})
	if tbs, err = b.Bytes(); err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, ErrNoSCT
	}
	return tbs, ext, nil
}

// dropSCTList adds to b every extension of exts but the SCT list, and
// returns the SCT list extension's value and whether there was one.
func dropSCTList(b *cryptobyte.Builder, exts cryptobyte.String) (value []byte, found bool) {
	for !exts.Empty() {
		var elem, e, oid, v cryptobyte.String
		if !exts.ReadASN1Element(&elem, asn1.SEQUENCE) {
			b.SetError(fmt.Errorf("%w: certificate extension is not DER", ErrInvalid))
			return nil, false
		}
		rest := elem
		if !rest.ReadASN1(&e, asn1.SEQUENCE) || !e.ReadASN1(&oid, asn1.OBJECT_IDENTIFIER) {
			b.SetError(fmt.Errorf("%w: certificate extension is not DER", ErrInvalid))
			return nil, false
		}
		if !bytes.Equal(oid, oidSCTList) {
			b.AddBytes(elem)
			continue
		}
		var critical bool // either way: the log signed the extensions without it
		if found || (e.PeekASN1Tag(asn1.BOOLEAN) && !e.ReadASN1Boolean(&critical)) || !e.ReadASN1(&v, asn1.OCTET_STRING) || !e.Empty() {
			b.SetError(fmt.Errorf("%w: SCT list extension is repeated or not DER", ErrInvalid))
			return nil, false
		}
		value, found = v, true
	}
	return value, found
}
