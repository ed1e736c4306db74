// JSON strings that are always valid whatever bytes they are made from (json.hpp).
#include "json.hpp"

#include <cstring>

namespace petacomm::prof {

int utf8_sequence(const unsigned char *p, size_t n) {
  if (n == 0) return 0;
  const unsigned c = p[0];
  if (c < 0x80) return 1;
  int len;
  unsigned code;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    code = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    code = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    code = c & 0x07;
  } else {
    return 0;  // continuation byte, overlong lead (c0, c1) or beyond U+10FFFF
  }
  if (n < static_cast<size_t>(len)) return 0;
  for (int k = 1; k < len; ++k) {
    if ((p[k] & 0xc0) != 0x80) return 0;
    code = (code << 6) | (p[k] & 0x3f);
  }
  if ((len == 3 && code < 0x800) || (len == 4 && code < 0x10000) || code > 0x10ffff ||
      (code >= 0xd800 && code <= 0xdfff))
    return 0;  // overlong, too large, or a UTF-16 surrogate
  return len;
}

JsonOut &JsonOut::s(const char *raw) {
  out_->append(raw);
  return *this;
}

JsonOut &JsonOut::u(uint64_t v) {
  char tmp[24];
  int i = 23;
  tmp[i] = '\0';
  do {
    tmp[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  out_->append(tmp + i, static_cast<size_t>(23 - i));
  return *this;
}

JsonOut &JsonOut::i(int64_t v) {
  if (v < 0) {
    out_->push_back('-');
    return u(static_cast<uint64_t>(-(v + 1)) + 1);
  }
  return u(static_cast<uint64_t>(v));
}

JsonOut &JsonOut::q(const char *text) { return q(text, text ? std::strlen(text) : 0); }

JsonOut &JsonOut::q(const char *text, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const auto *p = reinterpret_cast<const unsigned char *>(text);
  out_->push_back('"');
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out_->push_back('\\');
      out_->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      out_->append(esc, 6);
      ++i;
    } else if (c < 0x80) {
      out_->push_back(static_cast<char>(c));
      ++i;
    } else if (const int len = utf8_sequence(p + i, n - i)) {
      out_->append(text + i, static_cast<size_t>(len));
      i += static_cast<size_t>(len);
    } else {
      const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      out_->append(esc, 6);
      ++i;
    }
  }
  out_->push_back('"');
  return *this;
}

std::string command_json(const char *args, size_t n) {
  std::string text = "[";
  JsonOut o(&text);
  bool first = true;
  for (size_t i = 0; i < n;) {
    const size_t len = strnlen(args + i, n - i);
    if (!first) text.push_back(',');
    first = false;
    o.q(args + i, len);
    i += len + 1;
  }
  text.push_back(']');
  return text;
}

std::string command_shell(const char *args, size_t n) {
  std::string text;
  for (size_t i = 0; i < n;) {
    const size_t len = strnlen(args + i, n - i);
    if (!text.empty()) text.push_back(' ');
    bool plain = len > 0;
    for (size_t k = 0; k < len; ++k) {
      const char c = args[i + k];
      if (!(std::strchr("@%+=:,./-_", c) || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
            (c >= 'A' && c <= 'Z')))
        plain = false;
    }
    if (plain) {
      text.append(args + i, len);
    } else {  // single quotes; a quote inside as '"'"'
      text.push_back('\'');
      for (size_t k = 0; k < len; ++k) {
        if (args[i + k] == '\'')
          text.append("'\"'\"'");
        else
          text.push_back(args[i + k]);
      }
      text.push_back('\'');
    }
    i += len + 1;
  }
  return text;
}

}  // namespace petacomm::prof
