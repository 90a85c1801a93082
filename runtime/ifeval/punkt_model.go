package ifeval

// The parameters of nltk's pretrained English Punkt model
// (tokenizers/punkt/english.pickle) that sentence counting uses.

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// punktAbbrevs are the model's abbreviation types (lowercase, final period
// removed).
var punktAbbrevs = set(
	"prof", "r.i", "g.k", "r.t", "tenn", "j.r", "chg", "s.c", "ph.d", "n.m", "messrs", "pa", "c.v",
	"inc", "r.a", "t", "r", "ct", "reps", "s.g", "t.j", "w.va", "a.c", "a.m", "s.a.y", "va", "ms",
	"d.c", "ltd", "a.s", "ft", "a.a", "jan", "w.r", "cos", "r.k", "mich", "u.n", "c", "d.h", "ill",
	"d.w", "h.c", "kan", "jr", "col", "corp", "p.m", "l.f", "rep", "dr", "fla", "sept", "u.s.a",
	"h.m", "r.h", "feb", "nov", "w", "ok", "sep", "g", "j.j", "i.m.s", "a.d", "j.c", "ave", "bros",
	"oct", "minn", "a.m.e", "n.y", "ky", "l", "u.k", "ariz", "n.d", "b.f", "sw", "l.a", "m.b.a",
	"yr", "calif", "h.f", "e.f", "j.p", "e.m", "p.a.m", "v", "st", "e.l", "a.g", "u.s", "l.p",
	"g.d", "wed", "ga", "adm", "ala", "colo", "tues", "okla", "f", "n", "cie", "b.v", "co", "f.j",
	"k", "e", "h", "n.h", "e.h", "s.s", ". . ", "u.s.s.r", "c.i.t", "conn", "f.g", "p", "fri",
	"s.p.a", "a.h", "s.a", "dec", "s", "d", "n.j", "sr", "m.j", "g.f", "maj", "n.v", "lt", "ore",
	"wis", "m", "mr", "wash", "aug", "c.o.m.b", "nev", "mg", "vt", "sen", "j.k", "a.t", "mrs",
	"n.c", "j.b", "vs", "r.j", "w.c", "m.d.c", "w.w", "gen",
)

// punktCollocations are the model's (word before period, word after)
// pairs, joined with ",".
var punktCollocations = set(
	"##number##,international", "i,toussie", "b,smith", "##number##,genentech", "b,stewart",
	"##number##,pay-fone", "##number##,henley", "##number##,insider", "##number##,wedgestone",
	"j,aron", "##number##,financing", "##number##,review", "##number##,cbot", "##number##,zimmer",
	"b,levine", "##number##,aes", "##number##,cooper", "##number##,colgate", "##number##,pegasus",
	"##number##,pepper", "j,walter", "##number##,corrections", "##number##,rj", "##number##,dividend",
	"##number##,notable", "##number##,who", "b,wigton", "##number##,commodities", "i,magnin",
	"##number##,leisure", "o,ludcke", "##number##,abreast", "##number##,credit", "##number##,letters",
	"b,edelman", "##number##,business", "j,fialka",
)

// punktStarters are the model's frequent sentence starters.
var punktStarters = set(
	"although", "but", "separately", "yet", "so", "indeed", "many", "both", "even", "nor",
	"meanwhile", "the", "most", "in", "these", "among", "nonetheless", "nevertheless", "sales",
	"under", "he", "some", "this", "they", "there", "while", "i", "since", "despite", "according",
	"thus", "instead", "if", "though", "moreover", "similarly", "however", "when", "it",
)

// punktCommon are frequent English words the model has seen lowercase (see
// punktOrtho).
var punktCommon = set(
	"a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "because",
	"been", "before", "best", "better", "but", "by", "can", "could", "do", "does", "each", "even",
	"every", "first", "for", "from", "get", "good", "great", "had", "has", "have", "he", "her",
	"here", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "let", "like", "make",
	"many", "may", "more", "most", "much", "my", "new", "next", "no", "not", "now", "of", "on",
	"once", "one", "only", "or", "other", "our", "out", "over", "people", "remember", "she",
	"should", "since", "so", "some", "such", "take", "than", "that", "the", "their", "them", "then",
	"there", "these", "they", "this", "those", "through", "time", "to", "two", "up", "use", "very",
	"was", "we", "well", "were", "what", "when", "where", "which", "while", "who", "why", "will",
	"with", "would", "yes", "yet", "you", "your", "although", "however", "finally", "instead",
	"moreover", "meanwhile", "thus", "therefore", "overall", "today", "step", "note", "another",
	"let's", "it's", "i'm", "don't", "that's", "there's", "here's", "what's", "we're", "you're",
	"please", "hello", "thanks", "thank",
)
