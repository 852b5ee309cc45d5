// A tiny interpreter: generated source text is tokenized, parsed into a unique_ptr AST with
// virtual dispatch, and evaluated over std::variant values with std::function builtins.
#include <cctype>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <variant>
#include <vector>

#include "common.h"

namespace work {

namespace {

using Value = std::variant<long long, std::string>;

std::string show(const Value &v) {
    if (auto p = std::get_if<long long>(&v)) return std::to_string(*p);
    return "\"" + std::get<std::string>(v) + "\"";
}

struct Env {
    std::unordered_map<std::string, Value> vars;
    std::map<std::string, std::function<Value(std::vector<Value> &)>> builtins;
};

struct Expr {
    virtual ~Expr() = default;
    virtual Value eval(Env &env) const = 0;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Num : Expr {
    long long v;
    explicit Num(long long v) : v(v) {}
    Value eval(Env &) const override { return v; }
};
struct Str : Expr {
    std::string v;
    explicit Str(std::string v) : v(std::move(v)) {}
    Value eval(Env &) const override { return v; }
};
struct Var : Expr {
    std::string name;
    explicit Var(std::string n) : name(std::move(n)) {}
    Value eval(Env &env) const override {
        auto it = env.vars.find(name);
        return it == env.vars.end() ? Value(0LL) : it->second;
    }
};
struct Bin : Expr {
    char op;
    ExprPtr l, r;
    Bin(char op, ExprPtr l, ExprPtr r) : op(op), l(std::move(l)), r(std::move(r)) {}
    Value eval(Env &env) const override {
        Value a = l->eval(env), b = r->eval(env);
        if (op == '+' && (std::holds_alternative<std::string>(a) ||
                          std::holds_alternative<std::string>(b))) {
            auto s = [](const Value &v) {
                return std::holds_alternative<std::string>(v) ? std::get<std::string>(v)
                                                              : std::to_string(std::get<long long>(v));
            };
            std::string joined = s(a) + s(b);
            if (joined.size() > 64) joined = joined.substr(joined.size() - 64);
            return joined;
        }
        auto num = [](const Value &v) {
            return std::holds_alternative<long long>(v) ? std::get<long long>(v)
                                                        : (long long)std::get<std::string>(v).size();
        };
        long long x = num(a), y = num(b);
        switch (op) {
        case '+': return (x + y) % 1000000007LL;
        case '-': return (x - y) % 1000000007LL;
        case '*': return (x * (y % 100003)) % 1000000007LL;
        case '%': return y ? x % y : 0LL;
        default: throw std::runtime_error("bad op");
        }
    }
};
struct Call : Expr {
    std::string fn;
    std::vector<ExprPtr> args;
    Value eval(Env &env) const override {
        std::vector<Value> vals;
        for (auto &a : args) vals.push_back(a->eval(env));
        return env.builtins.at(fn)(vals);
    }
};

struct Parser {
    std::vector<std::string> toks;
    size_t pos = 0;
    explicit Parser(const std::string &src) {
        for (size_t i = 0; i < src.size();) {
            char c = src[i];
            if (std::isspace((unsigned char)c)) { i++; continue; }
            size_t j = i + 1;
            if (std::isalnum((unsigned char)c)) {
                while (j < src.size() && std::isalnum((unsigned char)src[j])) j++;
            } else if (c == '"') {
                while (src[j] != '"') j++;
                j++;
            }
            toks.push_back(src.substr(i, j - i));
            i = j;
        }
    }
    const std::string &peek() const { static std::string end; return pos < toks.size() ? toks[pos] : end; }
    std::string take() { return toks.at(pos++); }
    ExprPtr primary() {
        std::string t = take();
        if (t == "(") { auto e = expr(); take(); return e; }
        if (t[0] == '"') return std::make_unique<Str>(t.substr(1, t.size() - 2));
        if (std::isdigit((unsigned char)t[0])) return std::make_unique<Num>(std::stoll(t));
        if (peek() == "(") {
            take();
            auto call = std::make_unique<Call>();
            call->fn = t;
            while (peek() != ")") {
                call->args.push_back(expr());
                if (peek() == ",") take();
            }
            take();
            return call;
        }
        return std::make_unique<Var>(t);
    }
    ExprPtr term() {
        auto e = primary();
        while (peek() == "*" || peek() == "%") {
            char op = take()[0];
            e = std::make_unique<Bin>(op, std::move(e), primary());
        }
        return e;
    }
    ExprPtr expr() {
        auto e = term();
        while (peek() == "+" || peek() == "-") {
            char op = take()[0];
            e = std::make_unique<Bin>(op, std::move(e), term());
        }
        return e;
    }
};

std::string gen_expr(Rng &rng, int depth) {
    uint64_t r = rng.below(depth > 3 ? 4 : 9);
    switch (r) {
    case 0: return std::to_string(rng.below(1000));
    case 1: return "v" + std::to_string(rng.below(20));
    case 2: return "\"" + make_word(rng) + "\"";
    case 3: return "len(v" + std::to_string(rng.below(20)) + ")";
    case 4: return "(" + gen_expr(rng, depth + 1) + " + " + gen_expr(rng, depth + 1) + ")";
    case 5: return gen_expr(rng, depth + 1) + " * " + gen_expr(rng, depth + 1);
    case 6: return gen_expr(rng, depth + 1) + " - " + gen_expr(rng, depth + 1);
    case 7: return "max(" + gen_expr(rng, depth + 1) + ", " + gen_expr(rng, depth + 1) + ")";
    default: return "rev(" + gen_expr(rng, depth + 1) + ")";
    }
}

}  // namespace

std::string run_interpreter(int scale) {
    Env env;
    env.builtins["len"] = [](std::vector<Value> &a) -> Value {
        return std::holds_alternative<std::string>(a[0]) ? (long long)std::get<std::string>(a[0]).size()
                                                         : (long long)std::to_string(std::get<long long>(a[0])).size();
    };
    env.builtins["max"] = [](std::vector<Value> &a) -> Value {
        return show(a[0]) < show(a[1]) ? a[1] : a[0];
    };
    env.builtins["rev"] = [](std::vector<Value> &a) -> Value {
        std::string s = show(a[0]);
        return std::string(s.rbegin(), s.rend());
    };
    Rng rng(99);
    std::list<std::pair<std::string, ExprPtr>> program;
    const int n = 4000 * scale;
    size_t source_bytes = 0;
    for (int i = 0; i < n; i++) {
        std::string src = gen_expr(rng, 0);
        source_bytes += src.size();
        Parser p(src);
        program.emplace_back("v" + std::to_string(i % 20), p.expr());
    }
    Digest d;
    int strings = 0;
    for (int round = 0; round < 3; round++)
        for (auto &[name, e] : program) {
            Value v = e->eval(env);
            strings += std::holds_alternative<std::string>(v);
            d.add(show(v));
            env.vars[name] = std::move(v);
        }
    std::ostringstream out;
    out << "interp statements " << n << " source bytes " << source_bytes << "\n";
    out << "interp string results " << strings << " digest " << d.hex() << "\n";
    std::map<std::string, std::string> sorted;
    for (auto &[k, v] : env.vars) sorted[k] = show(v);
    for (auto &[k, v] : sorted) out << "interp " << k << " = " << v << "\n";
    program.remove_if([](auto &stmt) { return stmt.first.size() == 2; });
    out << "interp kept " << program.size() << "\n";
    return out.str();
}

}  // namespace work
