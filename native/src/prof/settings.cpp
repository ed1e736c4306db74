// The PETACOMM_PROF_* settings: one generic parser over the table generated from
// prof-settings.json (prof_settings.hpp), and the grammar of sizes, identical to
// petacomm.units.parse_size ("4MB" is 4,000,000 bytes, "4MiB" and "4M" 4,194,304).
// A bad value is an error naming the variable and the value, never a silent default.
#include <locale.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "state.hpp"

namespace petacomm::prof {

namespace {

struct Unit {
  const char *name;  // upper case
  double scale;
};
constexpr Unit kUnits[] = {
    {"", 1},
    {"B", 1},
    {"KIB", 1024.0},
    {"MIB", 1024.0 * 1024},
    {"GIB", 1024.0 * 1024 * 1024},
    {"TIB", 1024.0 * 1024 * 1024 * 1024},
    {"K", 1024.0},
    {"M", 1024.0 * 1024},
    {"G", 1024.0 * 1024 * 1024},
    {"T", 1024.0 * 1024 * 1024 * 1024},
    {"KB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
};

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A number as C reads it whatever the program's locale.
double c_strtod(const char *text) {
  static locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  return c_locale ? strtod_l(text, nullptr, c_locale) : std::strtod(text, nullptr);
}

// Bytes of a size text (e.g. "4096", "4KiB", "1.5MB"); false with the reason in `error`.
// The grammar and the messages are those of petacomm.units.parse_size/parse_byte_count.
bool parse_size_text(const char *raw, double *bytes, char *error, size_t cap) {
  char text[128];
  const char *begin = raw, *end = raw + std::strlen(raw);
  while (begin < end && is_space(*begin)) ++begin;
  while (end > begin && is_space(end[-1])) --end;
  const size_t n = static_cast<size_t>(end - begin);
  const char *expected = "expected e.g. 8, 64KiB, 1MiB, 2.5MB";
  if (n >= sizeof(text)) {
    std::snprintf(error, cap, "not a byte size: '%s' (%s)", raw, expected);
    return false;
  }
  std::memcpy(text, begin, n);
  text[n] = '\0';
  // ([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?([A-Za-z]*)
  size_t i = 0, digits = 0;
  while (is_digit(text[i])) ++i, ++digits;
  if (text[i] == '.') {
    ++i;
    while (is_digit(text[i])) ++i, ++digits;
  }
  bool ok = digits > 0 && !(text[0] == '.' && digits == 0);
  if (ok && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (text[j] == '+' || text[j] == '-') ++j;
    if (is_digit(text[j])) {
      while (is_digit(text[j])) ++j;
      i = j;
    }
  }
  const size_t number_end = i;
  while (is_alpha(text[i])) ++i;
  if (!ok || text[i] != '\0') {
    std::snprintf(error, cap, "not a byte size: '%s' (%s)", raw, expected);
    return false;
  }
  char unit[16] = {0};
  const size_t unit_len = i - number_end;
  for (size_t k = 0; k < unit_len && k + 1 < sizeof(unit); ++k)
    unit[k] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[number_end + k])));
  double scale = 0;
  for (const Unit &u : kUnits)
    if (unit_len < sizeof(unit) && std::strcmp(unit, u.name) == 0) scale = u.scale;
  if (scale == 0) {
    std::snprintf(error, cap,
                  "unknown size unit '%.*s' in '%s' (expected B, KiB, MiB, GiB, TiB, K, M, G, T, "
                  "kB, MB, GB, TB)",
                  static_cast<int>(unit_len), text + number_end, raw);
    return false;
  }
  text[number_end] = '\0';
  const double value = c_strtod(text) * scale;
  if (!std::isfinite(value)) {  // same words as petacomm.units.parse_size
    std::snprintf(error, cap, "byte size '%s' is too large", raw);
    return false;
  }
  if (value != std::floor(value)) {
    std::snprintf(error, cap, "not a whole number of bytes: '%s'", raw);
    return false;
  }
  *bytes = value;
  return true;
}

bool parse_count_text(const char *raw, double *value) {
  const char *p = raw;
  while (is_space(*p)) ++p;
  if (!is_digit(*p)) return false;
  double v = 0;
  while (is_digit(*p)) v = v * 10 + (*p++ - '0');
  while (is_space(*p)) ++p;
  if (*p != '\0') return false;
  *value = v;
  return true;
}

bool parse_seconds_text(const char *raw, double *value) {
  // [0-9]+(\.[0-9]*)?|\.[0-9]+, optionally with an exponent: a non-negative decimal number.
  const char *p = raw;
  while (is_space(*p)) ++p;
  const char *start = p;
  size_t digits = 0;
  while (is_digit(*p)) ++p, ++digits;
  if (*p == '.') {
    ++p;
    while (is_digit(*p)) ++p, ++digits;
  }
  if (digits == 0) return false;
  if (*p == 'e' || *p == 'E') {
    const char *q = p + 1;
    if (*q == '+' || *q == '-') ++q;
    if (!is_digit(*q)) return false;
    while (is_digit(*q)) ++q;
    p = q;
  }
  const char *stop = p;
  while (is_space(*p)) ++p;
  if (*p != '\0' || stop - start >= 64) return false;
  char number[64];
  std::memcpy(number, start, static_cast<size_t>(stop - start));
  number[stop - start] = '\0';
  *value = c_strtod(number);
  return std::isfinite(*value);
}

const char *kind_of(int call) { return kCallKinds[call]; }

bool kind_matches(const char *token, int call) {
  const char *kind = kind_of(call);
  if (std::strcmp(token, "all") == 0) return true;
  if (std::strcmp(token, kCallNames[call]) == 0 || std::strcmp(token, kind) == 0) return true;
  if (std::strcmp(token, "p2p") == 0)
    return !std::strcmp(kind, "send") || !std::strcmp(kind, "recv") ||
           !std::strcmp(kind, "sendrecv") || !std::strcmp(kind, "probe");
  if (std::strcmp(token, "rma") == 0) return std::strncmp(kind, "rma_", 4) == 0;
  if (std::strcmp(token, "io") == 0) return std::strncmp(kind, "io_", 3) == 0;
  if (std::strcmp(token, "mpi") == 0) return std::strcmp(kind, "posix") != 0;
  return false;
}

bool known_kind(const char *token) {
  static const char *const kinds[] = {"all",      "p2p",      "rma",      "io",    "mpi",
                                      "send",     "recv",     "sendrecv", "probe", "coll",
                                      "rma_send", "rma_recv", "rma_sync", "req",   "io_read",
                                      "io_write", "io_other", "comm",     "misc",  "posix"};
  for (const char *k : kinds)
    if (std::strcmp(token, k) == 0) return true;
  return false;
}

bool parse_one(const SettingDef &def, const char *text, char *field, char *error, size_t cap) {
  double number = 0;
  switch (def.type) {
    case kSettingPath:
    case kSettingWrap:
      if (std::strlen(text) >= def.capacity) {
        std::snprintf(error, cap, "longer than %zu characters", def.capacity - 1);
        return false;
      }
      std::snprintf(field, def.capacity, "%s", text);
      return true;
    case kSettingChoice:
      for (int i = 0; def.choices[i]; ++i) {
        if (std::strcmp(text, def.choices[i]) == 0) {
          *reinterpret_cast<int *>(field) = i;
          return true;
        }
      }
      {
        size_t len = static_cast<size_t>(std::snprintf(error, cap, "must be one of"));
        for (int i = 0; def.choices[i] && len < cap; ++i)
          len += static_cast<size_t>(
              std::snprintf(error + len, cap - len, "%s %s", i ? "," : "", def.choices[i]));
      }
      return false;
    case kSettingBool:
      if (std::strcmp(text, "0") == 0 || std::strcmp(text, "1") == 0) {
        *reinterpret_cast<bool *>(field) = text[0] == '1';
        return true;
      }
      std::snprintf(error, cap, "must be 0 or 1");
      return false;
    case kSettingSize:
      if (!parse_size_text(text, &number, error, cap)) return false;
      break;
    case kSettingCount:
      if (!parse_count_text(text, &number)) {
        std::snprintf(error, cap, "not a whole number");
        return false;
      }
      break;
    case kSettingSeconds:
      if (!parse_seconds_text(text, &number)) {
        std::snprintf(error, cap, "not a number of seconds");
        return false;
      }
      break;
  }
  if (number < def.minimum || number > def.maximum) {
    std::snprintf(error, cap, "must be between %.17g and %.17g", def.minimum, def.maximum);
    return false;
  }
  if (def.type == kSettingSeconds)
    *reinterpret_cast<double *>(field) = number;
  else
    *reinterpret_cast<uint64_t *>(field) = static_cast<uint64_t>(number);
  return true;
}

}  // namespace

bool parse_settings(char *error, size_t cap) {
  char *base = reinterpret_cast<char *>(&g.settings);
  for (const SettingDef &def : kSettingDefs) {
    const char *value = std::getenv(def.env);
    const bool given = value && *value;
    char why[512];
    if (!parse_one(def, given ? value : def.default_value, base + def.offset, why, sizeof(why))) {
      std::snprintf(error, cap, "%s='%s': %s", def.env, given ? value : def.default_value, why);
      return false;
    }
  }
  return set_enabled_calls(g.settings.wrap, error, cap);
}

bool set_enabled_calls(const char *wrap, char *error, size_t cap) {
  // Tokens in order; "-token" removes. An initial removal starts from "all".
  char buf[sizeof(g.settings.wrap)];
  std::snprintf(buf, sizeof(buf), "%s", (wrap && *wrap) ? wrap : "all");
  bool first = true;
  for (char *save = nullptr, *tok = strtok_r(buf, ", ", &save); tok;
       tok = strtok_r(nullptr, ", ", &save)) {
    const bool remove = tok[0] == '-';
    const char *name = remove ? tok + 1 : tok;
    if (first) {
      std::memset(g_hot.enabled, remove ? 1 : 0, sizeof(g_hot.enabled));
      first = false;
    }
    bool any = false;
    for (int c = 0; c < kNumCalls; ++c) {
      if (kind_matches(name, c)) {
        g_hot.enabled[c] = remove ? 0 : 1;
        any = true;
      }
    }
    // A call of the spec that this MPI lacks is not an error; a misspelt kind is.
    if (!any && !known_kind(name) && std::strncmp(name, "MPI_", 4) != 0) {
      std::snprintf(error, cap,
                    "PETACOMM_PROF_WRAP='%s': '%s' names no call, kind (send recv sendrecv probe "
                    "coll rma_send rma_recv rma_sync req io_read io_write io_other comm misc "
                    "posix) or group (all p2p rma io mpi)",
                    wrap, name);
      return false;
    }
  }
  if (first) std::memset(g_hot.enabled, 1, sizeof(g_hot.enabled));
  // Activations of persistent requests follow their *_init call.
  for (int c = 0; c < kNumCalls; ++c) {
    const char *colon = std::strchr(kCallNames[c], ':');
    if (!colon) continue;
    for (int d = 0; d < kNumCalls; ++d) {
      if (std::strncmp(kCallNames[d], kCallNames[c], colon - kCallNames[c]) == 0 &&
          kCallNames[d][colon - kCallNames[c]] == '\0')
        g_hot.enabled[c] = g_hot.enabled[d];
    }
  }
  return true;
}

}  // namespace petacomm::prof

// For tests (tests/prof/test_settings.py): the runtime's size grammar, to compare with
// petacomm.units. Returns 0 and the bytes, or -1 and the message.
extern "C" PETACOMM_PROF_EXPORT int petacomm_prof_parse_size(const char *text, double *bytes,
                                                             char *error, size_t cap) {
  return petacomm::prof::parse_size_text(text ? text : "", bytes, error, cap) ? 0 : -1;
}
