/*
 * cc_front.h - the compiler-shaped job that bench/user/sprite.c (pmake, pmakeInd:
 * Hartman & Ousterhout section 5.1) and bench/user/smload.c (Andrew's make phase: Small &
 * Manley section 4) both run: the source and its #include "hN.h" headers read into one
 * text, tokenized, the identifiers in a symbol table, then the compile (cc_compile). Each
 * program includes it after its own helpers, which it calls (die, fail, xopen, xclose,
 * read_all), and its PATHMAX, CC_PASSES and OBJ_BYTES. One copy, so that the two programs'
 * compile steps do the same work per byte of source.
 */
#ifndef KSYNC_BENCH_CC_FRONT_H
#define KSYNC_BENCH_CC_FRONT_H

#define CC_TEXT		(256 * 1024)
#define CC_TOKS		65536
#define CC_SYMS		4096		/* a power of two */
#define CC_CODE		256		/* the object's code words */

enum { T_IDENT = 1, T_NUM, T_STR, T_PUNCT };

struct tok {
	uint32_t hash;
	int32_t sym;		/* an identifier's symbol, else -1 */
	uint8_t kind;
};

struct sym {
	uint32_t hash, off, len, count, value, depth;
};

static char cc_text[CC_TEXT];
static struct tok cc_tok[CC_TOKS];
static struct sym cc_sym[CC_SYMS];
static int32_t cc_slot[2 * CC_SYMS];
static int cc_ntok, cc_nsym;

static uint32_t fnv(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static uint32_t rotl(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* an identifier's symbol (interned on first sight) */
static int32_t intern(uint32_t off, uint32_t len, uint32_t h)
{
	uint32_t mask = 2 * CC_SYMS - 1;
	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		int32_t s = cc_slot[i] - 1;
		if (s < 0) {
			if (cc_nsym == CC_SYMS)
				fail("more than %d symbols", CC_SYMS);
			s = cc_nsym++;
			cc_sym[s] = (struct sym){ .hash = h, .off = off, .len = len };
			cc_slot[i] = s + 1;
			return s;
		}
		if (cc_sym[s].hash == h && cc_sym[s].len == len &&
		    !memcmp(cc_text + cc_sym[s].off, cc_text + off, len))
			return s;
	}
}

static void add_tok(uint8_t kind, uint32_t off, uint32_t len)
{
	if (cc_ntok == CC_TOKS)
		fail("more than %d tokens", CC_TOKS);
	uint32_t h = fnv(cc_text + off, len) ^ kind;
	cc_tok[cc_ntok++] = (struct tok){ .hash = h, .kind = kind,
		.sym = kind == T_IDENT ? intern(off, len, h) : -1 };
}

/* identifiers, numbers, strings, punctuation; comments and #include lines skipped */
static void tokenize(size_t from, size_t to)
{
	static const char *const two[] = { "==", "!=", "<=", ">=", "->", "++", "--", "&&", "||",
					   "<<", ">>", "+=", "-=", "^=", "|=", "&=" };
	const char *t = cc_text;
	size_t i = from;
	while (i < to) {
		char c = t[i];
		size_t j = i + 1;
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			i++;
			continue;
		}
		if (c == '/' && j < to && (t[j] == '*' || t[j] == '/')) {
			bool block = t[j] == '*';
			j++;
			while (j < to && !(block ? t[j] == '*' && j + 1 < to && t[j + 1] == '/' :
					   t[j] == '\n'))
				j++;
			i = block ? j + 2 : j;
			continue;
		}
		if (c == '#' && to - i >= 8 && !memcmp(t + i, "#include", 8)) {
			while (j < to && t[j] != '\n')
				j++;
			i = j;
			continue;
		}
		if (is_alpha(c)) {
			while (j < to && (is_alpha(t[j]) || is_digit(t[j])))
				j++;
			add_tok(T_IDENT, (uint32_t)i, (uint32_t)(j - i));
		} else if (is_digit(c)) {
			while (j < to && (is_alpha(t[j]) || is_digit(t[j]) || t[j] == '.'))
				j++;
			add_tok(T_NUM, (uint32_t)i, (uint32_t)(j - i));
		} else if (c == '"' || c == '\'') {
			while (j < to && t[j] != c && t[j] != '\n')
				j += t[j] == '\\' ? 2 : 1;
			j = j < to ? j + 1 : to;
			add_tok(T_STR, (uint32_t)i, (uint32_t)(j - i));
		} else {
			for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
				if (j < to && c == two[k][0] && t[j] == two[k][1]) {
					j++;
					break;
				}
			add_tok(T_PUNCT, (uint32_t)i, (uint32_t)(j - i));
		}
		i = j;
	}
}

/* the source's #include "NAME" lines: each header (beside the source) stat()ed and
 * appended to the text */
static size_t read_headers(const char *src, size_t src_len, size_t len)
{
	char path[PATHMAX];
	const char *slash = strrchr(src, '/');
	int dlen = slash ? (int)(slash - src + 1) : 0;
	for (size_t i = 0; i < src_len;) {
		size_t e = i;
		while (e < src_len && cc_text[e] != '\n')
			e++;
		const char *l = cc_text + i;
		if (e - i > 11 && !memcmp(l, "#include \"", 10)) {
			const char *q = memchr(l + 10, '"', e - i - 10);
			if (!q)
				fail("%s: an #include without its closing quote", src);
			mkpath(path, "%.*s%.*s", dlen, src, (int)(q - l - 10), l + 10);
			struct stat st;
			if (stat(path, &st))
				die("stat %s", path);
			if ((size_t)st.st_size >= CC_TEXT - len)
				fail("%s: the sources are larger than %d bytes", src, CC_TEXT);
			int fd = xopen(path, O_RDONLY);
			size_t n = read_all(fd, cc_text + len, CC_TEXT - len, path);
			xclose(fd, path);
			if (n != (size_t)st.st_size)
				fail("%s: read %zu bytes, stat said %lld", path, n,
				     (long long)st.st_size);
			len += n;
		}
		i = e + 1;
	}
	return len;
}

/* The compile itself: src and its headers read, tokenized, a parse pass (nesting, uses,
 * calls), then CC_PASSES passes that fold every token into its symbol's value and the
 * code words; obj[OBJ_BYTES] receives the object (a header, the first symbols - value,
 * count, name - and the code). Deterministic: the same source and headers, the same
 * bytes. The caller writes obj out its own way. */
static void cc_compile(const char *src, unsigned char obj[OBJ_BYTES])
{
	static uint32_t code[CC_CODE];
	int fd = xopen(src, O_RDONLY);
	struct stat st;
	if (fstat(fd, &st))
		die("fstat %s", src);
	size_t src_len = read_all(fd, cc_text, CC_TEXT, src);
	xclose(fd, src);
	if (src_len == CC_TEXT || src_len != (size_t)st.st_size)
		fail("%s: read %zu bytes of %lld (limit %d)", src, src_len, (long long)st.st_size,
		     CC_TEXT - 1);
	size_t len = read_headers(src, src_len, src_len);
	tokenize(src_len, len);		/* the headers first, as the preprocessor would */
	tokenize(0, src_len);

	uint32_t depth = 0, calls = 0, acc = 2166136261u;
	const uint32_t lbrace = fnv("{", 1) ^ T_PUNCT, rbrace = fnv("}", 1) ^ T_PUNCT,
		       lparen = fnv("(", 1) ^ T_PUNCT;
	for (int i = 0; i < cc_ntok; i++) {
		const struct tok *t = &cc_tok[i];
		if (t->hash == lbrace)
			depth++;
		else if (t->hash == rbrace && depth)
			depth--;
		else if (t->sym >= 0) {
			struct sym *y = &cc_sym[t->sym];
			y->count++;
			y->depth |= 1u << (depth & 31);
			if (i + 1 < cc_ntok && cc_tok[i + 1].hash == lparen)
				calls++;
		}
	}
	for (int pass = 0; pass < CC_PASSES; pass++)
		for (int i = 0; i < cc_ntok; i++) {
			const struct tok *t = &cc_tok[i];
			if (t->sym >= 0) {
				struct sym *y = &cc_sym[t->sym];
				y->value = rotl(y->value ^ t->hash, 7) * 0x9e3779b1u + acc;
				acc ^= y->value >> 3;
			} else
				acc = rotl(acc, 5) + t->hash;
			code[(uint32_t)i % CC_CODE] += acc;
		}

	uint32_t hdr[8] = { 0x4a424f53u /* "SOBJ" */, 1, (uint32_t)src_len,
			    (uint32_t)(len - src_len), (uint32_t)cc_ntok, (uint32_t)cc_nsym, calls,
			    acc };
	memcpy(obj, hdr, sizeof hdr);
	size_t off = sizeof hdr;
	for (int s = 0; s < cc_nsym && off + 16 <= OBJ_BYTES / 2; s++, off += 16) {
		const struct sym *y = &cc_sym[s];
		memcpy(obj + off, &y->value, 4);
		memcpy(obj + off + 4, &y->count, 4);
		memcpy(obj + off + 8, cc_text + y->off, y->len < 8 ? y->len : 8);
	}
	memcpy(obj + OBJ_BYTES / 2, code, sizeof code);
}

#endif
