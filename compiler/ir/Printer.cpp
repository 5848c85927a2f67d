#include "compiler/ir/Printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

namespace genc {

std::string formatFloat(double v, bool asFloat) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    double back = std::strtod(buf, nullptr);
    if (asFloat ? static_cast<float>(back) == static_cast<float>(v) : back == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string quoteString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string formatName(const std::string &name) {
  bool bare = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    bare &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  return bare ? name : quoteString(name);
}

static std::string tensorStr(const Tensor &t) {
  std::ostringstream os;
  os << "dense<" << dtypeName(t.dtype()) << "[";
  for (size_t i = 0; i < t.shape().size(); ++i)
    os << (i ? ", " : "") << t.shape()[i];
  os << "]: [";
  for (int64_t i = 0; i < t.numElements(); ++i) {
    os << (i ? ", " : "");
    if (isFloat(t.dtype()))
      os << formatFloat(t.getDouble(i), t.dtype() != DType::F64);
    else
      os << t.getInt(i);
  }
  os << "]>";
  return os.str();
}

std::string attributeStr(const Attribute &a) {
  struct V {
    std::string operator()(int64_t v) { return std::to_string(v); }
    // Attributes read from ONNX are float32; print those at float precision so
    // 1e-5 reads as 1e-05, not 9.99999974737875e-06.
    static std::string fmt(double v) {
      return formatFloat(v, static_cast<double>(static_cast<float>(v)) == v);
    }
    std::string operator()(double v) { return fmt(v); }
    std::string operator()(const std::string &s) { return quoteString(s); }
    std::string operator()(const std::vector<int64_t> &v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<double> &v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i)
        s += (i ? ", " : "") + fmt(v[i]);
      // An empty list reads back as ints; keep floats distinguishable.
      return v.empty() ? "floats[]" : s + "]";
    }
    std::string operator()(const DimList &d) {
      std::string s = "shape<";
      for (size_t i = 0; i < d.dims.size(); ++i)
        s += (i ? ", " : "") + d.dims[i].str();
      return s + ">";
    }
    std::string operator()(const Tensor &t) { return tensorStr(t); }
  };
  return std::visit(V{}, a);
}

namespace {
class FunctionPrinter {
public:
  FunctionPrinter(std::ostream &os, const PrintOptions &opts) : os_(os), opts_(opts) {}

  void print(const Function &f) {
    os_ << "  func @" << formatName(f.name()) << "(";
    for (size_t i = 0; i < f.arguments().size(); ++i) {
      Value *a = f.arguments()[i].get();
      names_[a] = "%" + formatName(a->name());
      os_ << (i ? ", " : "") << names_[a] << ": " << a->type().str();
    }
    os_ << ") -> (";
    for (size_t i = 0; i < f.outputs().size(); ++i)
      os_ << (i ? ", " : "") << formatName(f.outputs()[i].name) << ": "
          << f.outputs()[i].value->type().str();
    os_ << ") {\n";
    for (auto &op : f.ops())
      printOp(*op);
    os_ << "    return";
    for (size_t i = 0; i < f.outputs().size(); ++i)
      os_ << (i ? ", " : " ") << name(f.outputs()[i].value);
    os_ << "\n  }\n";
  }

private:
  std::string name(const Value *v) {
    if (v->isWeight())
      return "@" + formatName(v->name());
    auto it = names_.find(v);
    return it == names_.end() ? "%<undefined>" : it->second;
  }

  void printOp(const Op &op) {
    os_ << "    ";
    for (size_t i = 0; i < op.numResults(); ++i) {
      names_[op.result(i)] = "%" + std::to_string(next_++);
      os_ << (i ? ", " : "") << names_[op.result(i)];
    }
    if (op.numResults())
      os_ << " = ";
    os_ << op.kind() << "(";
    for (size_t i = 0; i < op.numOperands(); ++i)
      os_ << (i ? ", " : "") << name(op.operand(i));
    os_ << ")";
    if (!op.attrs().empty()) {
      os_ << " {";
      bool first = true;
      for (auto &[k, a] : op.attrs()) {
        os_ << (first ? "" : ", ") << formatName(k) << " = " << attributeStr(a);
        first = false;
      }
      os_ << "}";
    }
    if (op.numResults()) {
      os_ << " : ";
      for (size_t i = 0; i < op.numResults(); ++i)
        os_ << (i ? ", " : "") << op.result(i)->type().str();
    }
    if (opts_.locations && !op.loc().empty())
      os_ << " loc(" << quoteString(op.loc()) << ")";
    os_ << "\n";
  }

  std::ostream &os_;
  const PrintOptions &opts_;
  std::unordered_map<const Value *, std::string> names_;
  unsigned next_ = 0;
};
} // namespace

void printFunction(const Function &f, std::ostream &os, const PrintOptions &opts) {
  FunctionPrinter(os, opts).print(f);
}

void printModule(const Module &m, std::ostream &os, const PrintOptions &opts) {
  os << "module {\n";
  for (auto &[k, v] : m.metadata())
    os << "  meta " << quoteString(k) << " = " << quoteString(v) << "\n";
  for (auto &w : m.weights())
    os << "  weight @" << formatName(w->name()) << " : " << w->type().str() << "\n";
  for (auto &f : m.functions())
    printFunction(*f, os, opts);
  os << "}\n";
}

std::string moduleToString(const Module &m, const PrintOptions &opts) {
  std::ostringstream os;
  printModule(m, os, opts);
  return os.str();
}

} // namespace genc
