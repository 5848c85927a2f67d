#include "compiler/ir/Parser.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

namespace genc {
namespace {

struct Token {
  enum Kind { Ident, LocalName, GlobalName, Int, Float, String, Punct, Arrow, End } kind = End;
  std::string text; // identifier / name / string contents / punct char
  int64_t intValue = 0;
  double floatValue = 0;
  int line = 0, col = 0;
};

class Lexer {
public:
  Lexer(const std::string &s) : s_(s) {}

  llvm::Expected<Token> next() {
    skipSpace();
    Token t;
    t.line = line_;
    t.col = col_;
    if (pos_ >= s_.size()) {
      t.kind = Token::End;
      return t;
    }
    char c = s_[pos_];
    if (c == '%' || c == '@') {
      advance();
      t.kind = c == '%' ? Token::LocalName : Token::GlobalName;
      if (pos_ < s_.size() && s_[pos_] == '"') {
        auto str = readString();
        if (!str)
          return str.takeError();
        t.text = *str;
      } else {
        t.text = readWhile([](char ch) { return std::isalnum((unsigned char)ch) || ch == '_' || ch == '.'; });
        if (t.text.empty())
          return err(t, "expected a name after '" + std::string(1, c) + "'");
      }
      return t;
    }
    if (c == '"') {
      auto str = readString();
      if (!str)
        return str.takeError();
      t.kind = Token::String;
      t.text = *str;
      return t;
    }
    if (c == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {
      advance();
      advance();
      t.kind = Token::Arrow;
      return t;
    }
    if (std::isdigit((unsigned char)c) ||
        (c == '-' && pos_ + 1 < s_.size() &&
         (std::isdigit((unsigned char)s_[pos_ + 1]) || s_.compare(pos_ + 1, 3, "inf") == 0 ||
          s_.compare(pos_ + 1, 3, "nan") == 0)))
      return readNumber(t);
    if (std::isalpha((unsigned char)c) || c == '_') {
      t.kind = Token::Ident;
      t.text = readWhile([](char ch) { return std::isalnum((unsigned char)ch) || ch == '_' || ch == '.'; });
      if (t.text == "inf" || t.text == "nan") {
        t.kind = Token::Float;
        t.floatValue = t.text == "inf" ? INFINITY : NAN;
      }
      return t;
    }
    if (std::string("(){}[]<>,:=*+-").find(c) != std::string::npos) {
      advance();
      t.kind = Token::Punct;
      t.text = std::string(1, c);
      return t;
    }
    return err(t, std::string("unexpected character '") + c + "'");
  }

  llvm::Error err(const Token &t, const std::string &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%d:%d: %s", t.line, t.col,
                                   msg.c_str());
  }

private:
  void advance() {
    if (s_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void skipSpace() {
    while (pos_ < s_.size()) {
      if (std::isspace((unsigned char)s_[pos_])) {
        advance();
      } else if (s_[pos_] == '/' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '/') {
        while (pos_ < s_.size() && s_[pos_] != '\n')
          advance();
      } else {
        break;
      }
    }
  }
  template <typename F> std::string readWhile(F f) {
    size_t start = pos_;
    while (pos_ < s_.size() && f(s_[pos_]))
      advance();
    return s_.substr(start, pos_ - start);
  }
  llvm::Expected<std::string> readString() {
    Token t;
    t.line = line_;
    t.col = col_;
    advance(); // opening quote
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_];
      if (c == '\n')
        return err(t, "unterminated string");
      if (c == '\\') {
        advance();
        if (pos_ >= s_.size())
          break;
        if (s_[pos_] == 'x' && pos_ + 2 < s_.size()) {
          out += static_cast<char>(std::strtol(s_.substr(pos_ + 1, 2).c_str(), nullptr, 16));
          advance();
          advance();
          advance();
          continue;
        }
        out += s_[pos_];
        advance();
        continue;
      }
      out += c;
      advance();
    }
    if (pos_ >= s_.size())
      return err(t, "unterminated string");
    advance();
    return out;
  }
  llvm::Expected<Token> readNumber(Token t) {
    size_t start = pos_;
    if (s_[pos_] == '-')
      advance();
    if (s_.compare(pos_, 3, "inf") == 0 || s_.compare(pos_, 3, "nan") == 0) {
      bool isInf = s_[pos_] == 'i';
      advance(); advance(); advance();
      t.kind = Token::Float;
      t.floatValue = isInf ? -INFINITY : NAN;
      return t;
    }
    bool isFloat = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (std::isdigit((unsigned char)c)) {
        advance();
      } else if (c == '.' || c == 'e' || c == 'E') {
        isFloat = true;
        advance();
        if ((c == 'e' || c == 'E') && pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+'))
          advance();
      } else {
        break;
      }
    }
    std::string text = s_.substr(start, pos_ - start);
    t.text = text;
    if (isFloat) {
      t.kind = Token::Float;
      t.floatValue = std::strtod(text.c_str(), nullptr);
    } else {
      t.kind = Token::Int;
      errno = 0;
      t.intValue = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE)
        return err(t, "integer out of range: " + text);
    }
    return t;
  }

  const std::string &s_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

class Parser {
public:
  Parser(const std::string &text, const std::string &buffer) : lex_(text), buffer_(buffer) {}

  llvm::Expected<std::unique_ptr<Module>> run() {
    if (auto e = advance())
      return std::move(e);
    auto m = std::make_unique<Module>();
    if (auto e = expectIdent("module"))
      return std::move(e);
    if (auto e = expectPunct("{"))
      return std::move(e);
    while (!isPunct("}")) {
      if (isIdent("meta")) {
        if (auto e = parseMeta(*m))
          return std::move(e);
      } else if (isIdent("weight")) {
        if (auto e = parseWeight(*m))
          return std::move(e);
      } else if (isIdent("func")) {
        if (auto e = parseFunction(*m))
          return std::move(e);
      } else {
        return error("expected 'meta', 'weight', 'func' or '}'");
      }
    }
    if (auto e = advance())
      return std::move(e);
    if (tok_.kind != Token::End)
      return error("unexpected text after the module");
    return m;
  }

private:
  llvm::Error error(const std::string &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s:%d:%d: %s",
                                   buffer_.c_str(), tok_.line, tok_.col, msg.c_str());
  }
  llvm::Error advance() {
    auto t = lex_.next();
    if (!t)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s:%s", buffer_.c_str(),
                                     llvm::toString(t.takeError()).c_str());
    tok_ = *t;
    return llvm::Error::success();
  }
  bool isPunct(const char *p) const { return tok_.kind == Token::Punct && tok_.text == p; }
  bool isIdent(const char *p) const { return tok_.kind == Token::Ident && tok_.text == p; }
  llvm::Error expectPunct(const char *p) {
    if (!isPunct(p))
      return error(std::string("expected '") + p + "'");
    return advance();
  }
  llvm::Error expectIdent(const char *p) {
    if (!isIdent(p))
      return error(std::string("expected '") + p + "'");
    return advance();
  }
  // A name: bare identifier or quoted string.
  llvm::Expected<std::string> parseNameToken() {
    if (tok_.kind != Token::Ident && tok_.kind != Token::String)
      return error("expected a name");
    std::string s = tok_.text;
    if (auto e = advance())
      return std::move(e);
    return s;
  }

  llvm::Error parseMeta(Module &m) {
    if (auto e = advance())
      return e;
    if (tok_.kind != Token::String)
      return error("expected a quoted metadata key");
    std::string k = tok_.text;
    if (auto e = advance())
      return e;
    if (auto e = expectPunct("="))
      return e;
    if (tok_.kind != Token::String)
      return error("expected a quoted metadata value");
    m.metadata()[k] = tok_.text;
    return advance();
  }

  llvm::Error parseWeight(Module &m) {
    if (auto e = advance())
      return e;
    if (tok_.kind != Token::GlobalName)
      return error("expected '@name' after 'weight'");
    std::string name = tok_.text;
    if (m.weight(name))
      return error("duplicate weight '@" + name + "'");
    if (auto e = advance())
      return e;
    if (auto e = expectPunct(":"))
      return e;
    auto t = parseType();
    if (!t)
      return t.takeError();
    m.addWeight(name, *t, nullptr);
    return llvm::Error::success();
  }

  // dim := term (('+'|'-') term)* ; term := factor ('*' factor)* ; factor := int | ident | '-' factor
  llvm::Expected<Dim> parseDim() {
    auto t = parseDimTerm();
    if (!t)
      return t.takeError();
    Dim d = *t;
    while (isPunct("+") || isPunct("-") || (tok_.kind == Token::Int && tok_.text[0] == '-')) {
      if (tok_.kind == Token::Int) { // the lexer folded "-3" into one token
        auto r = parseDimTerm();
        if (!r)
          return r.takeError();
        d = d + *r;
        continue;
      }
      bool minus = isPunct("-");
      if (auto e = advance())
        return std::move(e);
      auto r = parseDimTerm();
      if (!r)
        return r.takeError();
      d = minus ? d - *r : d + *r;
    }
    return d;
  }
  llvm::Expected<Dim> parseDimTerm() {
    auto f = parseDimFactor();
    if (!f)
      return f.takeError();
    Dim d = *f;
    while (isPunct("*")) {
      if (auto e = advance())
        return std::move(e);
      auto r = parseDimFactor();
      if (!r)
        return r.takeError();
      d = d * *r;
    }
    return d;
  }
  llvm::Expected<Dim> parseDimFactor() {
    Dim d;
    if (tok_.kind == Token::Int)
      d = Dim(tok_.intValue);
    else if (tok_.kind == Token::Ident)
      d = Dim::symbol(tok_.text);
    else
      return error("expected a dimension");
    if (auto e = advance())
      return std::move(e);
    return d;
  }
  llvm::Expected<Shape> parseDimList(const char *close) {
    Shape s;
    while (!isPunct(close)) {
      auto d = parseDim();
      if (!d)
        return d.takeError();
      s.push_back(*d);
      if (isPunct(","))
        if (auto e = advance())
          return std::move(e);
    }
    if (auto e = advance())
      return std::move(e);
    return s;
  }

  llvm::Expected<Type> parseType() {
    if (tok_.kind != Token::Ident)
      return error("expected a type such as f32[batch, 64]");
    auto dt = parseDType(tok_.text);
    if (!dt)
      return error("unknown element type '" + tok_.text + "'");
    if (auto e = advance())
      return std::move(e);
    if (auto e = expectPunct("["))
      return std::move(e);
    auto s = parseDimList("]");
    if (!s)
      return s.takeError();
    return Type{*dt, *s};
  }

  llvm::Expected<Tensor> parseDense() {
    // dense<DTYPE[d0, d1]: [v, ...]>
    if (auto e = expectPunct("<"))
      return std::move(e);
    auto type = parseType();
    if (!type)
      return type.takeError();
    auto shape = constantShape(type->shape);
    if (!shape)
      return error("dense tensors need constant shapes");
    for (int64_t d : *shape)
      if (d < 0)
        return error("negative dimension in a dense tensor");
    if (auto e = expectPunct(":"))
      return std::move(e);
    if (auto e = expectPunct("["))
      return std::move(e);
    Tensor t(type->dtype, *shape);
    int64_t i = 0;
    while (!isPunct("]")) {
      if (i >= t.numElements())
        return error("too many elements for " + type->str());
      if (tok_.kind == Token::Int)
        t.setInt(i, tok_.intValue);
      else if (tok_.kind == Token::Float)
        t.setDouble(i, tok_.floatValue);
      else
        return error("expected a number");
      if (isFloat(t.dtype()) && tok_.kind == Token::Int)
        t.setDouble(i, static_cast<double>(tok_.intValue));
      ++i;
      if (auto e = advance())
        return std::move(e);
      if (isPunct(","))
        if (auto e = advance())
          return std::move(e);
    }
    if (i != t.numElements())
      return error("expected " + std::to_string(t.numElements()) + " elements for " + type->str());
    if (auto e = advance())
      return std::move(e);
    if (auto e = expectPunct(">"))
      return std::move(e);
    return t;
  }

  llvm::Expected<Attribute> parseAttribute() {
    if (tok_.kind == Token::Int) {
      int64_t v = tok_.intValue;
      if (auto e = advance())
        return std::move(e);
      return Attribute(v);
    }
    if (tok_.kind == Token::Float) {
      double v = tok_.floatValue;
      if (auto e = advance())
        return std::move(e);
      return Attribute(v);
    }
    if (tok_.kind == Token::String) {
      std::string v = tok_.text;
      if (auto e = advance())
        return std::move(e);
      return Attribute(v);
    }
    if (isIdent("dense")) {
      if (auto e = advance())
        return std::move(e);
      auto t = parseDense();
      if (!t)
        return t.takeError();
      return Attribute(*t);
    }
    if (isIdent("shape")) {
      if (auto e = advance())
        return std::move(e);
      if (auto e = expectPunct("<"))
        return std::move(e);
      auto s = parseDimList(">");
      if (!s)
        return s.takeError();
      return Attribute(DimList{*s});
    }
    if (isIdent("floats")) {
      if (auto e = advance())
        return std::move(e);
      if (auto e = expectPunct("["))
        return std::move(e);
      if (auto e = expectPunct("]"))
        return std::move(e);
      return Attribute(std::vector<double>{});
    }
    if (isPunct("[")) {
      if (auto e = advance())
        return std::move(e);
      std::vector<int64_t> ints;
      std::vector<double> floats;
      bool anyFloat = false;
      while (!isPunct("]")) {
        if (tok_.kind == Token::Int) {
          ints.push_back(tok_.intValue);
          floats.push_back(static_cast<double>(tok_.intValue));
        } else if (tok_.kind == Token::Float) {
          anyFloat = true;
          floats.push_back(tok_.floatValue);
        } else {
          return error("expected a number in the list");
        }
        if (auto e = advance())
          return std::move(e);
        if (isPunct(","))
          if (auto e = advance())
            return std::move(e);
      }
      if (auto e = advance())
        return std::move(e);
      if (anyFloat)
        return Attribute(floats);
      return Attribute(ints);
    }
    return error("expected an attribute value");
  }

  llvm::Expected<Value *> lookup(Module &m, const std::unordered_map<std::string, Value *> &locals) {
    Value *v = nullptr;
    if (tok_.kind == Token::LocalName) {
      auto it = locals.find(tok_.text);
      if (it == locals.end())
        return error("use of undefined value '%" + tok_.text + "'");
      v = it->second;
    } else if (tok_.kind == Token::GlobalName) {
      v = m.weight(tok_.text);
      if (!v)
        return error("use of undefined weight '@" + tok_.text + "'");
    } else {
      return error("expected a value ('%name' or '@weight')");
    }
    if (auto e = advance())
      return std::move(e);
    return v;
  }

  llvm::Error parseFunction(Module &m) {
    if (auto e = advance())
      return e;
    if (tok_.kind != Token::GlobalName)
      return error("expected '@name' after 'func'");
    if (m.function(tok_.text))
      return error("duplicate function '@" + tok_.text + "'");
    Function *f = m.addFunction(tok_.text);
    if (auto e = advance())
      return e;
    std::unordered_map<std::string, Value *> locals;
    if (auto e = expectPunct("("))
      return e;
    while (!isPunct(")")) {
      if (tok_.kind != Token::LocalName)
        return error("expected an argument '%name'");
      std::string name = tok_.text;
      if (locals.count(name))
        return error("duplicate argument '%" + name + "'");
      if (auto e = advance())
        return e;
      if (auto e = expectPunct(":"))
        return e;
      auto t = parseType();
      if (!t)
        return t.takeError();
      locals[name] = f->addArgument(name, *t);
      if (isPunct(","))
        if (auto e = advance())
          return e;
    }
    if (auto e = advance())
      return e;
    if (tok_.kind != Token::Arrow)
      return error("expected '->'");
    if (auto e = advance())
      return e;
    if (auto e = expectPunct("("))
      return e;
    std::vector<std::pair<std::string, Type>> outs;
    while (!isPunct(")")) {
      auto n = parseNameToken();
      if (!n)
        return n.takeError();
      if (auto e = expectPunct(":"))
        return e;
      auto t = parseType();
      if (!t)
        return t.takeError();
      outs.push_back({*n, *t});
      if (isPunct(","))
        if (auto e = advance())
          return e;
    }
    if (auto e = advance())
      return e;
    if (auto e = expectPunct("{"))
      return e;

    while (!isIdent("return")) {
      if (auto e = parseOp(m, *f, locals))
        return e;
    }
    if (auto e = advance())
      return e;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (i)
        if (auto e = expectPunct(","))
          return e;
      auto v = lookup(m, locals);
      if (!v)
        return v.takeError();
      if ((*v)->type() != outs[i].second)
        return error("return value " + std::to_string(i) + " has type " + (*v)->type().str() +
                     " but the signature says " + outs[i].second.str());
      f->addOutput(outs[i].first, *v);
    }
    return expectPunct("}");
  }

  llvm::Error parseOp(Module &m, Function &f, std::unordered_map<std::string, Value *> &locals) {
    std::vector<std::string> resultNames;
    while (tok_.kind == Token::LocalName) {
      resultNames.push_back(tok_.text);
      if (auto e = advance())
        return e;
      if (isPunct(","))
        if (auto e = advance())
          return e;
    }
    if (!resultNames.empty())
      if (auto e = expectPunct("="))
        return e;
    if (tok_.kind != Token::Ident)
      return error("expected an op name");
    std::string kind = tok_.text;
    if (auto e = advance())
      return e;
    if (auto e = expectPunct("("))
      return e;
    std::vector<Value *> operands;
    while (!isPunct(")")) {
      auto v = lookup(m, locals);
      if (!v)
        return v.takeError();
      operands.push_back(*v);
      if (isPunct(","))
        if (auto e = advance())
          return e;
    }
    if (auto e = advance())
      return e;
    std::map<std::string, Attribute> attrs;
    if (isPunct("{")) {
      if (auto e = advance())
        return e;
      while (!isPunct("}")) {
        auto n = parseNameToken();
        if (!n)
          return n.takeError();
        if (auto e = expectPunct("="))
          return e;
        auto a = parseAttribute();
        if (!a)
          return a.takeError();
        attrs[*n] = std::move(*a);
        if (isPunct(","))
          if (auto e = advance())
            return e;
      }
      if (auto e = advance())
        return e;
    }
    std::vector<Type> types;
    if (!resultNames.empty()) {
      if (auto e = expectPunct(":"))
        return e;
      for (size_t i = 0; i < resultNames.size(); ++i) {
        if (i)
          if (auto e = expectPunct(","))
            return e;
        auto t = parseType();
        if (!t)
          return t.takeError();
        types.push_back(*t);
      }
    }
    std::string loc;
    if (isIdent("loc")) {
      if (auto e = advance())
        return e;
      if (auto e = expectPunct("("))
        return e;
      if (tok_.kind != Token::String)
        return error("expected a quoted location");
      loc = tok_.text;
      if (auto e = advance())
        return e;
      if (auto e = expectPunct(")"))
        return e;
    }
    Op *op = f.append(std::make_unique<Op>(kind, operands, types, loc));
    for (auto &[k, a] : attrs)
      op->setAttr(k, std::move(a));
    for (size_t i = 0; i < resultNames.size(); ++i) {
      if (locals.count(resultNames[i]))
        return error("redefinition of '%" + resultNames[i] + "'");
      locals[resultNames[i]] = op->result(i);
    }
    return llvm::Error::success();
  }

  Lexer lex_;
  std::string buffer_;
  Token tok_;
};

} // namespace

llvm::Expected<std::unique_ptr<Module>> parseModule(const std::string &text,
                                                    const std::string &bufferName) {
  return Parser(text, bufferName).run();
}

} // namespace genc
