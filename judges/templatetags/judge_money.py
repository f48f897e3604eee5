"""{{ amount|money:currency }}: an amount of money as judges.budgets.money writes it, with
the digits it needs, on every page that shows a cost, a spend or a budget."""

from decimal import Decimal, InvalidOperation

from django import template

from judges.budgets import money as money_text

register = template.Library()


@register.filter
def money(amount: object, currency: str = "") -> str:
    if amount is None or amount == "":
        return ""
    try:
        return money_text(Decimal(str(amount)), currency or "")
    except InvalidOperation:
        return str(amount)
