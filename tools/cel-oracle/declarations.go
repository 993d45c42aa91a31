package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
)

// printDeclarations writes every overload of every function `env` declares, one a line, in
// the form apiserver-kit's type checker keeps them (src/cel/overloads.rs), functions by name
// and each function's overloads in their order of declaration (the checker's order):
//
//	_+_ add_list <A> (list(A), list(A)) -> list(A)
//	charAt string_char_at_int .(string, int) -> string
//
// A dot before the parenthesis marks a member overload (its first parameter is the target);
// `<...>` lists the type parameters, sorted.
func printDeclarations(env *cel.Env, out io.Writer) {
	functions := env.Functions()
	names := make([]string, 0, len(functions))
	for name := range functions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, overload := range functions[name].OverloadDecls() {
			args := make([]string, 0, len(overload.ArgTypes()))
			for _, arg := range overload.ArgTypes() {
				args = append(args, checker.FormatCELType(arg))
			}
			params := ""
			if len(overload.TypeParams()) > 0 {
				// cel-go lists them as a Go map iterates: in any order.
				names := append([]string(nil), overload.TypeParams()...)
				sort.Strings(names)
				params = "<" + strings.Join(names, " ") + "> "
			}
			member := ""
			if overload.IsMemberFunction() {
				member = "."
			}
			fmt.Fprintf(out, "%s %s %s%s(%s) -> %s\n", name, overload.ID(), params, member,
				strings.Join(args, ", "), checker.FormatCELType(overload.ResultType()))
		}
	}
}
