package ifeval

import (
	"strings"

	"github.com/abadojack/whatlanggo"
)

// DetectLanguage names the language of s with an ISO 639-1 code, standing
// in for the official scorer's langdetect.detect; "" means it cannot tell
// (no letters of a script it knows), which the checkers count as
// followed, as upstream does with langdetect's exception.
//
// The identifier is whatlanggo (trigram profiles of 84 languages, Cavnar
// and Trenkle). lingua-go, the more accurate library, embeds every
// language's models whatever languages a detector is built for (124 MB),
// four times nel-run's whole size budget; whatlanggo adds under 0.5 MB.
// Two additions make it dependable on the languages IFEval asks for:
//
//   - Cyrillic letters one language writes and another never does rule
//     that other out before the trigrams are compared (whatlanggo's
//     profiles take two sentences of Russian for Bulgarian);
//   - codes follow langdetect where they differ: Persian is "fa" (whatlanggo
//     has no ISO 639-1 code for it), Chinese "zh-cn".
//
// Swahili, which IFEval asks for, has no whatlanggo profile: see
// languageFollowed.
func DetectLanguage(s string) string {
	return code(detect(s, langdetectLangs))
}

// detect runs whatlanggo over the candidates less the Cyrillic languages
// the letters of s rule out.
func detect(s string, candidates map[whatlanggo.Lang]bool) whatlanggo.Info {
	allowed := candidates
	if out := cyrillicExclusions(s); len(out) > 0 {
		allowed = make(map[whatlanggo.Lang]bool, len(candidates))
		for l := range candidates {
			if !out[l] {
				allowed[l] = true
			}
		}
	}
	return whatlanggo.DetectWithOptions(s, whatlanggo.Options{Whitelist: allowed})
}

// code is the langdetect code of a detected language, "" for none.
func code(info whatlanggo.Info) string {
	if info.Script == nil || info.Lang < 0 {
		return ""
	}
	switch info.Lang {
	case whatlanggo.Pes:
		return "fa"
	case whatlanggo.Cmn:
		return "zh-cn"
	}
	if c := info.Lang.Iso6391(); c != "" {
		return c
	}
	return info.Lang.Iso6393() // no two-letter code: still a language, never ""
}

// langdetectLangs are the languages whatlanggo and langdetect both know.
// Restricting the choice to them keeps the identifier from answering with a
// language the official scorer could never name: Hindi written plainly
// comes out Bhojpuri or Maithili otherwise, Latin-script names Shona.
var langdetectLangs = func() map[whatlanggo.Lang]bool {
	m := map[whatlanggo.Lang]bool{}
	for _, l := range []whatlanggo.Lang{
		whatlanggo.Afr, whatlanggo.Arb, whatlanggo.Bul, whatlanggo.Ben, whatlanggo.Ces,
		whatlanggo.Dan, whatlanggo.Deu, whatlanggo.Ell, whatlanggo.Eng, whatlanggo.Spa,
		whatlanggo.Est, whatlanggo.Pes, whatlanggo.Fin, whatlanggo.Fra, whatlanggo.Guj,
		whatlanggo.Heb, whatlanggo.Hin, whatlanggo.Hrv, whatlanggo.Hun, whatlanggo.Ind,
		whatlanggo.Ita, whatlanggo.Jpn, whatlanggo.Kan, whatlanggo.Kor, whatlanggo.Lit,
		whatlanggo.Lav, whatlanggo.Mkd, whatlanggo.Mal, whatlanggo.Mar, whatlanggo.Nep,
		whatlanggo.Nld, whatlanggo.Nob, whatlanggo.Pan, whatlanggo.Pol, whatlanggo.Por,
		whatlanggo.Ron, whatlanggo.Rus, whatlanggo.Slv, whatlanggo.Som, whatlanggo.Swe,
		whatlanggo.Tam, whatlanggo.Tel, whatlanggo.Tha, whatlanggo.Tgl, whatlanggo.Tur,
		whatlanggo.Ukr, whatlanggo.Urd, whatlanggo.Vie, whatlanggo.Cmn,
	} {
		m[l] = true
	}
	return m
}()

// cyrillicExclusions returns the Cyrillic-script languages s cannot be
// in, judged by letters: ы and э are Russian and Belarusian, never
// Ukrainian, Bulgarian, Macedonian or Serbian; і, ї, є and ґ are
// Ukrainian (і also Belarusian), never Russian or Bulgarian; ъ is
// Bulgarian (and old or rare Russian), never Ukrainian.
func cyrillicExclusions(s string) map[whatlanggo.Lang]bool {
	out := map[whatlanggo.Lang]bool{}
	for _, r := range strings.ToLower(s) {
		switch r {
		case 'ы', 'э':
			out[whatlanggo.Ukr], out[whatlanggo.Bul], out[whatlanggo.Mkd], out[whatlanggo.Srp] = true, true, true, true
		case 'і', 'ї', 'є', 'ґ':
			out[whatlanggo.Rus], out[whatlanggo.Bul], out[whatlanggo.Mkd], out[whatlanggo.Srp] = true, true, true, true
			if r != 'і' {
				out[whatlanggo.Bel] = true
			}
		case 'ъ':
			out[whatlanggo.Ukr], out[whatlanggo.Bel], out[whatlanggo.Mkd], out[whatlanggo.Srp] = true, true, true, true
		}
	}
	return out
}

// ifevalLanguages are the codes of instructions_util.LANGUAGE_CODES, the
// languages IFEval's language:response_language asks for.
var ifevalLanguages = map[string]bool{
	"en": true, "es": true, "pt": true, "ar": true, "hi": true, "fr": true, "ru": true, "de": true,
	"ja": true, "it": true, "bn": true, "uk": true, "th": true, "ur": true, "ta": true, "te": true,
	"bg": true, "ko": true, "pl": true, "he": true, "fa": true, "vi": true, "ne": true, "sw": true,
	"kn": true, "mr": true, "gu": true, "pa": true, "ml": true, "fi": true,
}

// unprofiled are IFEval's languages the identifier has no profile for.
var unprofiled = map[string]bool{"sw": true}

// languageFollowed reports whether a response whose detected language is
// got answers an instruction to write in want. A language the identifier
// cannot recognise can only be checked the other way round: the response
// follows it unless it is recognisably one of IFEval's other languages
// (Swahili comes out as a related Bantu language, Shona or Zulu; an
// English answer comes out English).
func languageFollowed(got, want string) bool {
	switch {
	case got == "" || got == want:
		return true
	case unprofiled[want]:
		return !ifevalLanguages[got]
	}
	return false
}
