// Parsing IR text (see text.h) back into expressions, with errors that give line and column.
#include <cmath>
#include <cstdlib>
#include <map>

#include "ir/text.h"
#include "runtime/error.h"

namespace kiln::ir {
namespace {

using runtime::StrCat;

struct Token {
  enum Kind { kName, kIdent, kNumber, kString, kPunct, kEnd } kind = kEnd;
  std::string text;  // name without % and quotes; punctuation; number text
  int line = 1, column = 1;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Token Next() {
    SkipSpaceAndComments();
    Token t;
    t.line = line_;
    t.column = column_;
    if (pos_ >= text_.size()) return t;
    char c = text_[pos_];
    if (c == '%') {
      Advance();
      t.kind = Token::kName;
      if (Peek() == '"') {
        t.text = QuotedString(t);
      } else {
        while (pos_ < text_.size() && (std::isalnum(Uc(Peek())) || Peek() == '_')) t.text += Advance();
        if (t.text.empty()) Fail(t, "expected a name after '%'");
      }
      return t;
    }
    if (c == '"') {
      t.kind = Token::kString;
      t.text = QuotedString(t);
      return t;
    }
    if (std::isdigit(Uc(c)) || ((c == '-' || c == '+') && pos_ + 1 < text_.size() &&
                                (std::isdigit(Uc(text_[pos_ + 1])) || text_[pos_ + 1] == 'i' || text_[pos_ + 1] == 'n'))) {
      t.kind = Token::kNumber;
      t.text += Advance();
      while (pos_ < text_.size() && (std::isalnum(Uc(Peek())) || Peek() == '.' ||
                                     ((Peek() == '-' || Peek() == '+') && (t.text.back() == 'e' || t.text.back() == 'E')))) {
        t.text += Advance();
      }
      return t;
    }
    if (std::isalpha(Uc(c)) || c == '_') {
      t.kind = Token::kIdent;
      while (pos_ < text_.size() && (std::isalnum(Uc(Peek())) || Peek() == '_' || Peek() == '.')) t.text += Advance();
      return t;
    }
    if (c == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '>') {
      Advance();
      Advance();
      t.kind = Token::kPunct;
      t.text = "->";
      return t;
    }
    if (std::string("()[]{},;=:.").find(c) != std::string::npos) {
      t.kind = Token::kPunct;
      t.text = std::string(1, Advance());
      return t;
    }
    Fail(t, StrCat("unexpected character '", c, "'"));
  }

  static std::string Position(const Token& at) { return StrCat("line ", at.line, ", column ", at.column); }
  [[noreturn]] static void Fail(const Token& at, const std::string& message) {
    throw runtime::Error(message, {"", Position(at), ""});
  }

 private:
  static int Uc(char c) { return static_cast<unsigned char>(c); }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  char Advance() {
    char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }
  void SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      if (std::isspace(Uc(Peek()))) {
        Advance();
      } else if (Peek() == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && Peek() != '\n') Advance();
      } else {
        break;
      }
    }
  }
  std::string QuotedString(const Token& at) {
    Advance();  // opening quote
    std::string text;
    while (true) {
      if (pos_ >= text_.size()) Fail(at, "unterminated string");
      char c = Advance();
      if (c == '"') return text;
      if (c == '\\') {
        if (pos_ >= text_.size()) Fail(at, "unterminated string");
        c = Advance();
      }
      text += c;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : lexer_(text) { Shift(); }

  Expr ParseTop() {
    Expr f = ParseFunction();
    if (token_.kind != Token::kEnd) Error("expected the end of the text after the function");
    return f;
  }

 private:
  using Scope = std::map<std::string, Expr>;

  [[noreturn]] void Error(const std::string& message) { Lexer::Fail(token_, message + Got()); }
  std::string Got() const {
    if (token_.kind == Token::kEnd) return ", got the end of the text";
    return ", got '" + (token_.kind == Token::kName ? "%" + token_.text : token_.text) + "'";
  }
  void Shift() { token_ = lexer_.Next(); }
  bool IsPunct(const char* p) const { return token_.kind == Token::kPunct && token_.text == p; }
  bool IsIdent(const char* word) const { return token_.kind == Token::kIdent && token_.text == word; }
  void Expect(const char* p) {
    if (!IsPunct(p)) Error(StrCat("expected '", p, "'"));
    Shift();
  }
  bool Accept(const char* p) {
    if (!IsPunct(p)) return false;
    Shift();
    return true;
  }
  std::string ExpectName() {
    if (token_.kind != Token::kName) Error("expected a %name");
    std::string name = token_.text;
    Shift();
    return name;
  }
  int64_t ExpectInt() {
    if (token_.kind != Token::kNumber) Error("expected an integer");
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(token_.text.c_str(), &end, 10);
    if (*end != '\0' || errno != 0) Error("expected an integer");
    Shift();
    return v;
  }
  double NumberValue() {
    if (token_.kind != Token::kNumber && !(token_.kind == Token::kIdent && (token_.text == "inf" || token_.text == "nan"))) {
      Error("expected a number");
    }
    char* end = nullptr;
    double v = std::strtod(token_.text.c_str(), &end);
    if (*end != '\0') Error("expected a number");
    Shift();
    return v;
  }

  // Tensor[(d0, d1), dtype] or (T, T, ...)
  Type ParseType() {
    if (IsIdent("Tensor")) {
      Shift();
      Expect("[");
      Expect("(");
      std::vector<int64_t> shape;
      while (!IsPunct(")")) {
        shape.push_back(ExpectInt());
        if (!Accept(",")) break;
      }
      Expect(")");
      Expect(",");
      if (token_.kind != Token::kIdent) Error("expected a dtype");
      DLDataType dtype;
      try {
        dtype = ParseDType(token_.text);
      } catch (const runtime::Error& e) {
        Error(e.what());
      }
      Shift();
      Expect("]");
      return Type::Tensor(shape, dtype);
    }
    if (Accept("(")) {
      std::vector<Type> fields;
      while (!IsPunct(")")) {
        fields.push_back(ParseType());
        if (!Accept(",")) break;
      }
      Expect(")");
      return Type::Tuple(fields);
    }
    Error("expected a type");
  }

  AttrValue ParseAttrValue() {
    if (token_.kind == Token::kString) {
      std::string s = token_.text;
      Shift();
      return s;
    }
    if (Accept("[")) {
      std::vector<std::string> texts;
      bool is_float = false;
      while (!IsPunct("]")) {
        if (token_.kind != Token::kNumber && !IsIdent("inf") && !IsIdent("nan")) Error("expected a number");
        is_float = is_float || token_.text.find_first_of(".eEin") != std::string::npos;
        texts.push_back(token_.text);
        Shift();
        if (!Accept(",")) break;
      }
      Expect("]");
      if (is_float) {
        std::vector<double> values;
        for (const auto& t : texts) values.push_back(std::strtod(t.c_str(), nullptr));
        return values;
      }
      std::vector<int64_t> values;
      for (const auto& t : texts) values.push_back(std::strtoll(t.c_str(), nullptr, 10));
      return values;
    }
    if (token_.kind == Token::kNumber || IsIdent("inf") || IsIdent("nan")) {
      std::string text = token_.text;
      if (text.find_first_of(".eEin") != std::string::npos) return NumberValue();
      return ExpectInt();
    }
    Error("expected an attribute value");
  }

  // name=value, ... up to (not including) `close`
  Attrs ParseAttrs(const char* close) {
    Attrs attrs;
    while (!IsPunct(close)) {
      if (token_.kind != Token::kIdent) Error("expected an attribute name");
      std::string name = token_.text;
      Shift();
      Expect("=");
      if (attrs.Has(name)) Error(StrCat("attribute '", name, "' is given twice"));
      attrs.Set(name, ParseAttrValue());
      if (!Accept(",")) break;
    }
    return attrs;
  }

  Expr Lookup(const std::string& name, const Token& at) {
    auto it = scopes_.back().find(name);
    if (it == scopes_.back().end()) Lexer::Fail(at, StrCat("%", name, " is not defined"));
    return it->second;
  }

  Expr ParseConstant() {
    Shift();  // const
    Expect("(");
    Type type = ParseType();
    if (!type.is_tensor()) Error("a constant must be a tensor");
    Expect(",");
    if (IsPunct(".")) Error("the constant's data was left out when it was printed; it cannot be parsed");
    Expect("[");
    const TensorType& t = type.tensor();
    runtime::NDArray array = runtime::NDArray::Empty(t.shape, t.dtype);
    int64_t n = t.NumElements(), i = 0;
    DLDataType d = t.dtype;
    while (!IsPunct("]")) {
      if (i >= n) Error(StrCat("more than ", n, " values for ", type.ToString()));
      void* data = array.data();
      if (d.code == kDLFloat && d.bits == 32) static_cast<float*>(data)[i] = static_cast<float>(NumberValue());
      else if (d.code == kDLFloat && d.bits == 64) static_cast<double*>(data)[i] = NumberValue();
      else if (d.code == kDLInt && d.bits == 64) static_cast<int64_t*>(data)[i] = ExpectInt();
      else if (d.code == kDLInt && d.bits == 32) static_cast<int32_t*>(data)[i] = static_cast<int32_t>(ExpectInt());
      else if (d.code == kDLInt && d.bits == 16) static_cast<int16_t*>(data)[i] = static_cast<int16_t>(ExpectInt());
      else if (d.code == kDLInt && d.bits == 8) static_cast<int8_t*>(data)[i] = static_cast<int8_t>(ExpectInt());
      else if (d.code == kDLUInt && (d.bits == 8 || d.bits == 1)) static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(ExpectInt());
      else Error(StrCat("constants of dtype ", DTypeToString(d), " cannot be written in text"));
      ++i;
      if (!Accept(",")) break;
    }
    Expect("]");
    Expect(")");
    if (i != n) Error(StrCat(type.ToString(), " needs ", n, " values, got ", i));
    return Constant(array);
  }

  std::vector<Expr> ParseArgs(const char* close) {
    std::vector<Expr> args;
    while (token_.kind == Token::kName) {
      Token at = token_;
      args.push_back(Lookup(ExpectName(), at));
      if (!Accept(",")) break;
      if (IsPunct(close)) Error("expected another argument");
    }
    return args;
  }

  Expr ParseValue() {
    Token at = token_;
    try {
      if (IsIdent("fn")) return ParseFunction();
      if (IsIdent("const")) return ParseConstant();
      if (token_.kind == Token::kIdent) {
        const OpDef* op = FindOp(token_.text);
        if (op == nullptr) Error("unknown op");
        Shift();
        Expect("(");
        std::vector<Expr> args = ParseArgs(")");
        Attrs attrs = ParseAttrs(")");
        Expect(")");
        return Call(*op, args, attrs);
      }
      if (Accept("(")) {
        std::vector<Expr> fields = ParseArgs(")");
        Expect(")");
        return Tuple(fields);
      }
      if (token_.kind == Token::kName) {
        Expr base = Lookup(ExpectName(), at);
        if (Accept(".")) return TupleGetItem(base, static_cast<int>(ExpectInt()));
        if (Accept("(")) {
          std::vector<Expr> args = ParseArgs(")");
          Expect(")");
          return CallFunction(base, args);
        }
        return base;
      }
    } catch (runtime::Error& e) {
      e.AddLocation({"", Lexer::Position(at), ""});  // where the value starts, unless it said more
      throw;
    }
    Error("expected a value");
  }

  Expr ParseFunction() {
    if (!IsIdent("fn")) Error("expected 'fn'");
    Shift();
    Attrs attrs;
    if (Accept("[")) {
      attrs = ParseAttrs("]");
      Expect("]");
    }
    Expect("(");
    scopes_.emplace_back();
    std::vector<Expr> params;
    while (token_.kind == Token::kName) {
      Token at = token_;
      std::string name = ExpectName();
      Expect(":");
      Expr var = Var(name, ParseType());
      if (!scopes_.back().emplace(name, var).second) Lexer::Fail(at, StrCat("%", name, " is defined twice"));
      params.push_back(var);
      if (!Accept(",")) break;
    }
    Expect(")");
    Type declared;
    Token type_at = token_;
    if (Accept("->")) declared = ParseType();
    Expect("{");
    Expr body;
    while (true) {
      if (token_.kind == Token::kName) {
        // "%n = value;" or the final "%n"
        Token at = token_;
        std::string name = ExpectName();
        if (Accept("=")) {
          Expr value = ParseValue();
          Expect(";");
          if (!scopes_.back().emplace(name, value).second) Lexer::Fail(at, StrCat("%", name, " is defined twice"));
          continue;
        }
        body = Lookup(name, at);
        if (Accept(".")) body = TupleGetItem(body, static_cast<int>(ExpectInt()));
        break;
      }
      body = ParseValue();
      break;
    }
    Expect("}");
    scopes_.pop_back();
    if (declared.defined() && declared != body->type()) {
      Lexer::Fail(type_at, StrCat("the function is declared to return ", declared.ToString(), " but returns ",
                                  body->type().ToString()));
    }
    return Function(params, body, attrs);
  }

  Lexer lexer_;
  Token token_;
  std::vector<Scope> scopes_;
};

}  // namespace

Expr ParseFunction(std::string_view text) { return Parser(text).ParseTop(); }

}  // namespace kiln::ir
