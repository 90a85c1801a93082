package ifeval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Respond writes a response to a prompt that follows all its instructions
// (follow=true; best effort where instructions conflict) or that strictly
// fails at least one (follow=false). The simulated endpoint uses it.
//
// A response is assembled from the instructions' requirements, then
// checked with Evaluate; counts that depend on the whole text (sentences,
// words) are corrected from the measured values and the text rebuilt, a
// few rounds at most.
func Respond(ids []string, kwargs []map[string]any, prompt string, follow bool, rng *rand.Rand) string {
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 2))
	}
	good := respondFollowing(ids, kwargs, prompt, rng)
	if follow {
		return good
	}
	for _, cand := range []string{
		breakOne(good),
		"Sorry, I can't help with that. Could you Ask me something else?",
		strings.Repeat("This Is A Long, Rambling Answer That Ignores The Request. ", 120),
	} {
		if v, err := Evaluate(ids, kwargs, prompt, cand); err == nil && !v.StrictAll {
			return cand
		}
	}
	return "" // an empty response follows no instruction
}

// breakOne spoils a following response in a way most instructions notice.
func breakOne(s string) string {
	return "Well, Here Is My Answer In Plain Words:\n" + strings.ReplaceAll(s, "\n", " ") + "\nThat Is All, Thanks."
}

// plan is what the instructions ask of a following response.
type plan struct {
	lang                  string
	lower, upper, noComma bool
	quote, jsonOut, two   bool
	repeat, endPhrase     string
	psMarker              string
	titleOn, constrained  bool
	keywords              []string
	kwFreq                map[string]int
	avoid                 []string // forbidden words and less-than keywords
	letter                rune
	letterMin             int
	letterBelow           int
	capsMin               int
	placeholders          int
	highlights            int
	bullets               int
	sections              int
	spliter               string
	paragraphs            int // "***" paragraphs
	nlParagraphs          int // "\n\n" paragraphs
	nth                   int // paragraph that starts with firstWord
	firstWord             string
	minSent, maxSent      int // maxSent exclusive, 0 = none
	minWords, maxWords    int
}

func makePlan(ids []string, kwargs []map[string]any) plan {
	p := plan{kwFreq: map[string]int{}, lang: "en"}
	for i, id := range ids {
		a := args{}
		if i < len(kwargs) {
			for k, v := range kwargs[i] {
				if v != nil {
					a[k] = v
				}
			}
		}
		n := func(name string) int { v, _ := a.int(name); return v }
		s := func(name string) string { v, _ := a.str(name); return v }
		lt := func(name string) bool { v, _ := a.relation(name); return v }
		switch id {
		case "keywords:existence":
			ws, _ := a.strs("keywords")
			p.keywords = append(p.keywords, ws...)
		case "keywords:frequency":
			if lt("relation") {
				p.avoid = append(p.avoid, s("keyword"))
			} else {
				p.kwFreq[s("keyword")] = max(p.kwFreq[s("keyword")], n("frequency"))
			}
		case "keywords:forbidden_words":
			ws, _ := a.strs("forbidden_words")
			p.avoid = append(p.avoid, ws...)
		case "keywords:letter_frequency":
			l := []rune(strings.ToLower(s("letter")))
			if len(l) == 1 {
				p.letter = l[0]
				if lt("let_relation") {
					p.letterBelow = n("let_frequency")
				} else {
					p.letterMin = n("let_frequency")
				}
			}
		case "language:response_language":
			p.lang = s("language")
		case "length_constraints:number_sentences":
			if lt("relation") {
				p.maxSent = n("num_sentences")
			} else {
				p.minSent = n("num_sentences")
			}
		case "length_constraints:number_paragraphs":
			p.paragraphs = n("num_paragraphs")
		case "length_constraints:number_words":
			if lt("relation") {
				p.maxWords = n("num_words")
			} else {
				p.minWords = n("num_words")
			}
		case "length_constraints:nth_paragraph_first_word":
			p.nlParagraphs, p.nth, p.firstWord = n("num_paragraphs"), n("nth_paragraph"), s("first_word")
		case "detectable_content:number_placeholders":
			p.placeholders = n("num_placeholders")
		case "detectable_content:postscript":
			p.psMarker = s("postscript_marker")
		case "detectable_format:number_bullet_lists":
			p.bullets = n("num_bullets")
		case "detectable_format:constrained_response":
			p.constrained = true
		case "detectable_format:number_highlighted_sections":
			p.highlights = n("num_highlights")
		case "detectable_format:multiple_sections":
			p.sections, p.spliter = n("num_sections"), s("section_spliter")
		case "detectable_format:json_format":
			p.jsonOut = true
		case "detectable_format:title":
			p.titleOn = true
		case "combination:two_responses":
			p.two = true
		case "combination:repeat_prompt":
			p.repeat = s("prompt_to_repeat")
		case "startend:end_checker":
			p.endPhrase = s("end_phrase")
		case "startend:quotation":
			p.quote = true
		case "change_case:capital_word_frequency":
			if lt("capital_relation") {
				// Sentences start capitalised but not all-caps: nothing to do.
			} else {
				p.capsMin = n("capital_frequency")
			}
		case "change_case:english_capital":
			p.upper = true
		case "change_case:english_lowercase":
			p.lower = true
		case "punctuation:no_comma":
			p.noComma = true
		}
	}
	return p
}

func respondFollowing(ids []string, kwargs []map[string]any, prompt string, rng *rand.Rand) string {
	p := makePlan(ids, kwargs)
	nSent := max(p.minSent, 3)
	if p.maxSent > 0 {
		nSent = min(nSent, max(p.maxSent-3, 1))
	}
	perSent := 8
	var best string
	for round := 0; round < 40; round++ {
		out := p.render(nSent, perSent, rng.Uint64())
		v, err := Evaluate(ids, kwargs, prompt, out)
		if err != nil {
			return out
		}
		best = out
		if v.StrictAll {
			return out
		}
		changed := false
		if sc := CountSentences(out); p.minSent > 0 && sc < p.minSent {
			nSent += p.minSent - sc
			changed = true
		} else if p.maxSent > 0 && sc >= p.maxSent && nSent > 0 {
			nSent = max(nSent-(sc-p.maxSent+1), 0)
			changed = true
		}
		if wc := CountWords(out); p.minWords > 0 && wc < p.minWords {
			perSent += (p.minWords-wc)/max(nSent, 1) + 1
			changed = true
		} else if p.maxWords > 0 && wc >= p.maxWords {
			if perSent > 3 {
				perSent = max(3, perSent-((wc-p.maxWords)/max(nSent, 1)+1))
			} else if nSent > 0 {
				nSent--
			}
			changed = true
		}
		if !changed {
			// Nothing measurable to correct: try another wording.
			continue
		}
	}
	return best
}

// render assembles a response with nSent body sentences of about perSent
// words each.
func (p plan) render(nSent, perSent int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	body := func(variant int) string { return p.body(nSent, perSent, variant, rng) }
	text := body(0)
	if p.two {
		second := body(1)
		if pyStrip(second) == pyStrip(text) {
			second += " " + p.word(rng)
		}
		text = text + "\n******\n" + second
	}
	if p.noComma {
		text = strings.ReplaceAll(text, ",", "")
	}
	switch {
	case p.lower:
		text = strings.ToLower(text)
	case p.upper:
		text = strings.ToUpper(text)
	}
	if p.repeat != "" {
		text = p.repeat + "\n" + text
	}
	if p.jsonOut {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if p.quote {
			_ = enc.Encode(text) // a JSON string is quoted and valid JSON
			return strings.TrimSpace(b.String())
		}
		_ = enc.Encode(map[string]string{"response": text})
		text = strings.TrimSpace(b.String())
	}
	if p.quote {
		text = `"` + text + `"`
	}
	return text
}

// body is one response's content (without repeat, JSON or quotes).
func (p plan) body(nSent, perSent, variant int, rng *rand.Rand) string {
	// phrases woven into the first sentences
	extras := append([]string(nil), p.keywords...)
	for k, f := range p.kwFreq {
		for range f {
			extras = append(extras, k)
		}
	}
	for i := range p.placeholders {
		extras = append(extras, fmt.Sprintf("[%s]", placeholderNames[i%len(placeholderNames)]))
	}
	for i := range p.highlights {
		extras = append(extras, fmt.Sprintf("*%s %d*", p.word(rng), i+1))
	}
	if p.letterMin > 0 {
		extras = append(extras, strings.Repeat(string(p.letter), p.letterMin))
	}
	for range p.capsMin {
		extras = append(extras, "NOTE")
	}
	sents := make([]string, 0, nSent)
	for i := range nSent {
		sents = append(sents, p.sentence(perSent, i+variant, rng))
	}
	if len(sents) == 0 {
		sents = append(sents, "")
	}
	// Spread the extras over the sentences, before their final period.
	for i, e := range extras {
		j := i % len(sents)
		s := sents[j]
		if strings.HasSuffix(s, ".") {
			sents[j] = s[:len(s)-1] + " " + e + "."
		} else {
			sents[j] = strings.TrimSpace(s + " " + e)
		}
	}
	var blocks []string
	nPar := max(p.paragraphs, p.nlParagraphs, p.sections, 1)
	per := (len(sents) + nPar - 1) / nPar
	for i := range nPar {
		lo, hi := min(i*per, len(sents)), min((i+1)*per, len(sents))
		par := strings.Join(sents[lo:hi], " ")
		if strings.TrimSpace(par) == "" {
			par = p.word(rng)
		}
		if p.nlParagraphs > 0 && i == p.nth-1 {
			par = p.firstWord + " " + par
		}
		if p.sections > 0 {
			par = fmt.Sprintf("%s %d\n%s", p.spliter, i+1, par)
		}
		blocks = append(blocks, par)
	}
	if p.bullets > 0 {
		var bl []string
		for range p.bullets {
			bl = append(bl, fmt.Sprintf("* %s %s", p.word(rng), p.word(rng)))
		}
		last := len(blocks) - 1
		blocks[last] += "\n" + strings.Join(bl, "\n")
	}
	sep := "\n\n"
	if p.paragraphs > 0 {
		sep = "\n***\n"
	}
	text := strings.Join(blocks, sep)
	if p.titleOn {
		text = "<<" + p.word(rng) + " " + p.word(rng) + ">>\n" + text
	}
	if p.constrained {
		text += " My answer is yes."
	}
	if p.psMarker != "" {
		text += "\n" + p.psMarker + " " + p.word(rng) + " " + p.word(rng)
	}
	if p.endPhrase != "" {
		text += " " + p.endPhrase
	}
	if variant == 1 {
		text = p.word(rng) + " " + text
	}
	return text
}

var placeholderNames = []string{"name", "address", "date", "city", "company", "phone", "email", "title", "amount", "time", "place", "item"}

// sentence is a filler sentence of about n words in the plan's language.
func (p plan) sentence(n, i int, rng *rand.Rand) string {
	if ss, ok := langSentences[p.lang]; ok {
		// Join the language's sentences into one of about n words.
		out := strings.TrimSuffix(ss[i%len(ss)], ".")
		for k := i + 1; CountWords(out) < n; k++ {
			out += " " + strings.TrimSuffix(ss[k%len(ss)], ".")
		}
		return out + "."
	}
	ws := make([]string, 0, n)
	for range max(n, 2) {
		ws = append(ws, p.word(rng))
	}
	ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
	return strings.Join(ws, " ") + "."
}

// word picks a filler word that avoids the plan's forbidden words and
// scarce letter.
func (p plan) word(rng *rand.Rand) string {
	for try := 0; try < 50; try++ {
		w := fillerWords[rng.IntN(len(fillerWords))]
		if p.letterBelow > 0 && strings.ContainsRune(w, p.letter) {
			continue
		}
		bad := false
		for _, a := range p.avoid {
			if strings.Contains(w, strings.ToLower(a)) || strings.Contains(strings.ToLower(a), w) {
				bad = true
				break
			}
		}
		if !bad {
			return w
		}
	}
	return "hmm"
}

var fillerWords = []string{
	"the", "garden", "river", "quiet", "morning", "bright", "simple", "plan", "works", "well",
	"with", "clear", "steps", "and", "good", "care", "for", "every", "day", "sky", "fun", "dry",
	"warm", "calm", "road", "trip", "many", "small", "ideas", "bring", "joy", "to", "our", "busy",
	"town", "this", "is", "truly", "lovely", "sunny", "glad", "hills", "kind", "words", "help",
	"us", "grow", "slowly", "but", "surely", "by", "it", "just", "thus", "why", "try",
}

// langSentences are filler sentences for the languages IFEval asks for.
var langSentences = map[string][]string{
	"de": {"Das ist ein schöner Tag und wir sind sehr froh darüber.", "Die Kinder spielen im Garten und die Sonne scheint."},
	"it": {"Questo è un giorno molto bello e siamo tutti felici.", "Il sole splende sul mare e la città è tranquilla."},
	"pt": {"Este é um dia muito bonito e estamos todos felizes.", "O sol brilha sobre o mar e a cidade está tranquila."},
	"fi": {"Tämä on kaunis päivä ja olemme kaikki iloisia.", "Aurinko paistaa ja kaupunki on hiljainen."},
	"sw": {"Hii ni siku nzuri sana na sisi sote tuna furaha.", "Jua linawaka na mji ni tulivu sana."},
	"vi": {"Đây là một ngày rất đẹp và chúng tôi đều vui vẻ.", "Mặt trời chiếu sáng và thành phố rất yên tĩnh."},
	"ru": {"Это очень хороший день и мы все рады.", "Солнце светит и город спокоен."},
	"bg": {"Това е много хубав ден и всички сме щастливи.", "Слънцето грее и градът е тих."},
	"ar": {"هذا يوم جميل جدا ونحن جميعا سعداء.", "الشمس مشرقة والمدينة هادئة."},
	"fa": {"این یک روز بسیار زیبا است و همه ما خوشحال هستیم.", "خورشید می\u200cتابد و شهر آرام است."},
	"ur": {"یہ ایک بہت خوبصورت دن ہے اور ہم سب خوش ہیں.", "سورج چمک رہا ہے اور شہر پرسکون ہے."},
	"hi": {"यह एक बहुत सुंदर दिन है और हम सब खुश हैं.", "सूरज चमक रहा है और शहर में शांति है."},
	"mr": {"हा एक खूप सुंदर दिवस आहे आणि आम्ही सर्व आनंदी आहोत.", "सूर्य चमकत आहे आणि शहर शांत आहे."},
	"ne": {"यो एक धेरै राम्रो दिन हो र हामी सबै खुसी छौं.", "घाम लागेको छ र सहर शान्त छ."},
	"bn": {"এটি একটি খুব সুন্দর দিন এবং আমরা সবাই খুশি.", "সূর্য উজ্জ্বল এবং শহর শান্ত."},
	"pa": {"ਇਹ ਇੱਕ ਬਹੁਤ ਸੋਹਣਾ ਦਿਨ ਹੈ ਅਤੇ ਅਸੀਂ ਸਾਰੇ ਖੁਸ਼ ਹਾਂ.", "ਸੂਰਜ ਚਮਕ ਰਿਹਾ ਹੈ ਅਤੇ ਸ਼ਹਿਰ ਸ਼ਾਂਤ ਹੈ."},
	"gu": {"આ એક ખૂબ સુંદર દિવસ છે અને અમે બધા ખુશ છીએ.", "સૂર્ય ચમકે છે અને શહેર શાંત છે."},
	"ta": {"இது ஒரு மிக அழகான நாள் நாங்கள் அனைவரும் மகிழ்ச்சியாக இருக்கிறோம்.", "சூரியன் பிரகாசிக்கிறது நகரம் அமைதியாக உள்ளது."},
	"te": {"ఇది చాలా అందమైన రోజు మేమంతా సంతోషంగా ఉన్నాము.", "సూర్యుడు ప్రకాశిస్తున్నాడు నగరం ప్రశాంతంగా ఉంది."},
	"kn": {"ಇದು ತುಂಬಾ ಸುಂದರವಾದ ದಿನ ನಾವೆಲ್ಲರೂ ಸಂತೋಷವಾಗಿದ್ದೇವೆ.", "ಸೂರ್ಯ ಹೊಳೆಯುತ್ತಿದ್ದಾನೆ ನಗರ ಶಾಂತವಾಗಿದೆ."},
	"ml": {"ഇത് വളരെ മനോഹരമായ ഒരു ദിവസമാണ്.", "സൂര്യൻ പ്രകാശിക്കുന്നു."},
	"ko": {"오늘은 정말 아름다운 날이고 우리는 모두 행복합니다.", "태양이 빛나고 도시는 조용합니다."},
	"th": {"วันนี้เป็นวันที่สวยงามมากและเราทุกคนมีความสุข.", "ดวงอาทิตย์ส่องแสงและเมืองเงียบสงบ."},
	"ja": {"今日はとても美しい日で、みんな幸せです.", "太陽が輝いていて、町は静かです."},
	"fr": {"C'est une très belle journée et nous sommes tous heureux.", "Le soleil brille et la ville est calme."},
	"es": {"Este es un día muy bonito y todos estamos felices.", "El sol brilla y la ciudad está tranquila."},
}
